import Foundation

/// Where the device's token is kept: not in the store, which device backups carry, but in the
/// Keychain, which outlives a reinstall (a reinstalled app signs in again without the operator)
/// and whose item never leaves this device.
public protocol TokenStore: Sendable {
    /// The token, or `nil` before the device was provisioned.
    func token() throws -> String?
    /// Keeps `token` (the sign-in screen, or a managed configuration, gave it).
    func save(_ token: String) throws
    /// Forgets the token: the device was wiped, and nothing of its access may stay.
    func remove() throws
}

#if canImport(Security)
import Security

/// The token in the Keychain: a generic password readable after the device's first unlock
/// (background syncs run while it is locked), on this device only (never in a backup that
/// could restore it elsewhere: each device has its own token).
public struct KeychainTokenStore: TokenStore {
    /// The Keychain service the token is kept under.
    public var service = "org.example.ClubRoster.revsync-token"

    public init() {}

    public func token() throws -> String? {
        var result: AnyObject?
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecReturnData as String: true,
        ]
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
        return String(decoding: data, as: UTF8.self)
    }

    public func save(_ token: String) throws {
        let match: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        SecItemDelete(match as CFDictionary)
        var item = match
        item[kSecValueData as String] = Data(token.utf8)
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public func remove() throws {
        let status = SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service] as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }
}

/// A Keychain call failed.
public struct KeychainError: Error {
    /// The `OSStatus`.
    public var status: OSStatus
}
#endif

/// The token in a file only its owner may read: for the command line and Linux, where there is
/// no Keychain.
public struct FileTokenStore: TokenStore {
    /// The file.
    public var path: String

    public init(path: String) {
        self.path = path
    }

    public func token() throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func save(_ token: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    public func remove() throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }
}
