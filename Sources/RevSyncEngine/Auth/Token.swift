import Crypto
public import RevSyncProtocol

/// Bearer tokens: random secrets shown once, stored only as SHA-256 hashes.
///
/// A token is `rs_` followed by 43 base64url characters (32 random bytes from the system's
/// secure generator). The server keeps `sha256(token)` in hex; a stolen database does not
/// reveal any token.
public enum Token {
    /// A new random token.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return "rs_" + base64URL(bytes)
    }

    /// The hash stored for `token`.
    public static func hash(_ token: String) -> String {
        TokenHash.sha256(token)
    }

    /// Creates a device with a new token; returns the token, which is not stored anywhere.
    ///
    /// A name is unique among the tokens not revoked, so that the logs and the audit trail
    /// (erasures, reverts, the console's sessions) tell every device apart; a revoked token's
    /// name may be given again (a replaced tablet).
    ///
    /// - Parameters:
    ///   - user: the record of the schema's users entity the device belongs to.
    ///   - uniqueName: refuse a name a live token has (``NameTaken``); `false` only for tests
    ///     and tools that make many devices of their own.
    public static func create(
        name: String, role: Role, user: RecordID? = nil, uniqueName: Bool = true, in storage: any SyncStorage
    ) async throws -> (
        device: Device, token: String
    ) {
        let token = generate()
        let hash = hash(token)
        let id = try await storage.withWriter { writer in
            try writer.transaction { () -> Int64 in
                if uniqueName {
                    // Under the revision lock: two creations of one name at once cannot both pass.
                    _ = try writer.lockRevision()
                    guard try !writer.allDevices().contains(where: { $0.revokedAt == nil && $0.device.name == name }) else {
                        throw NameTaken(name: name)
                    }
                }
                return try writer.createDevice(name: name, role: role, user: user, tokenHash: hash)
            }
        }
        return (Device(id: id, name: name, role: role, user: user), token)
    }

    /// A token not revoked already has this name.
    public struct NameTaken: Error, Sendable, CustomStringConvertible {
        public let name: String
        public var description: String {
            "a token named \"\(name.prefix(80))\" exists and is not revoked: choose another name, or revoke that token first"
        }
    }

    /// Creates an admin token if the store has no device at all; returns it, or `nil` if
    /// devices exist. Safe when several server instances start at once: the check and the
    /// creation hold the revision lock, so only one of them creates it.
    public static func createFirstAdmin(in storage: any SyncStorage) async throws -> String? {
        let token = generate()
        let hash = hash(token)
        let created = try await storage.withWriter { writer in
            try writer.transaction { () -> Bool in
                _ = try writer.lockRevision()
                guard try writer.allDevices().isEmpty else { return false }
                _ = try writer.createDevice(name: "admin", role: .admin, user: nil, tokenHash: hash)
                return true
            }
        }
        return created ? token : nil
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { output.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            var chunk = UInt32(bytes[index]) << 16
            if rest == 2 { chunk |= UInt32(bytes[index + 1]) << 8 }
            let characters = rest == 1 ? 2 : 3
            for shift in [18, 12, 6].prefix(characters) { output.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
