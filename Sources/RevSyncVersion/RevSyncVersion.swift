import RevSyncProtocol

/// What `--version` prints for each executable: the release and, for a build from a git
/// checkout, the revision (with `+` for uncommitted changes).
///
/// For example: `revsync 0.7 (git 3f2a9c1d0b4e)`.
public enum RevSyncVersion {
    /// The revision this build came from, `nil` outside a checkout.
    public static var gitRevision: String? { buildGitRevision }

    /// `NAME 0.7 (git 3f2a9c1d0b4e)`, or `NAME 0.7` outside a checkout.
    public static func line(_ executable: String) -> String {
        "\(executable) \(RevSyncRelease.number)" + (gitRevision.map { " (git \($0))" } ?? "")
    }
}
