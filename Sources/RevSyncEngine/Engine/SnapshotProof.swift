import Crypto
public import RevSyncProtocol

/// What a snapshot file carries to show that the server delivered its data set at its
/// revision: an HMAC-SHA256 of the data set and the revision, with a key only the server
/// holds (in its database).
///
/// A device started from a snapshot bundled with an app claims that revision on its first
/// sync without the server ever having sent it anything; it presents the proof (the
/// `RevSync-Snapshot-Proof` request header), and the server counts the revision as delivered.
/// A forged or foreign proof gains nothing: it is ignored.
///
/// Its text form is `<revision>.<64 hexadecimal digits>`.
public struct SnapshotProof: Sendable, Hashable, CustomStringConvertible {
    public let revision: Revision
    /// The HMAC, in lowercase hexadecimal.
    public let mac: String

    /// Reads the text form; `nil` if it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let revision = Revision(parts[0]), revision >= 0, parts[1].count == 64,
            parts[1].utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        self.revision = revision
        self.mac = String(parts[1])
    }

    /// Makes the proof of `dataset` at `revision`.
    public init(secret: [UInt8], dataset: String, revision: Revision) {
        self.revision = revision
        self.mac = Hex.encode(Self.code(secret: secret, dataset: dataset, revision: revision))
    }

    public var description: String { "\(revision).\(mac)" }

    /// Whether the server with `secret` made this proof for `dataset` (compared in constant time).
    public func isValid(secret: [UInt8], dataset: String) -> Bool {
        guard let given = Hex.decode(mac) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            given, authenticating: Self.message(dataset, revision), using: SymmetricKey(data: secret))
    }

    private static func code(secret: [UInt8], dataset: String, revision: Revision) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message(dataset, revision), using: SymmetricKey(data: secret)))
    }

    private static func message(_ dataset: String, _ revision: Revision) -> [UInt8] {
        Array("revsync-snapshot-proof|\(dataset)|\(revision)".utf8)
    }
}
