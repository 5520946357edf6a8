/// The release of RevSync this code is: what devices send as their client version
/// (`RevSyncClient/0.8 (Linux)`), what the console shows, and what `--version` prints.
public enum RevSyncRelease {
    public static let number = "0.13"
}
