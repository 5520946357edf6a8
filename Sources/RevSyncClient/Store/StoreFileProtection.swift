public import Foundation
import RevSyncSQLite

/// The data-protection class of the files RevSync keeps for a store on Apple platforms: the store,
/// its `-wal` and `-shm`, the attachments folder (whose new files inherit it) and a snapshot
/// download. Encrypted at rest with a key the device's passcode protects; what differs is when
/// the files can be read.
///
/// On Linux there are no such classes: the files are private to their owner (`0600`, in `0700`
/// folders) and the disk's encryption protects them at rest (`docs/deployment.md`).
public enum StoreFileProtection: String, Sendable, Hashable, CaseIterable {
    /// Readable from the first unlock after the device starts until it shuts down, locked or
    /// not: background syncs (`BGAppRefreshTask`) and live mode in the background keep running.
    /// The default.
    case completeUntilFirstUserAuthentication
    /// Readable only while the device is unlocked: a locked device's store cannot be read even
    /// by the app, so syncs and live mode stop whenever it locks (their reads and writes fail;
    /// a transaction under way rolls back and the next sync after the unlock does it again).
    case complete

    /// Foundation's name for the class.
    public var fileProtectionType: FileProtectionType {
        switch self {
        case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
        case .complete: .complete
        }
    }

    /// Gives `path` (a file, or a folder whose new files then inherit it) this class, where the
    /// platform has classes (iOS, iPadOS, tvOS, watchOS, visionOS).
    func apply(to path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        Self.applied.withLock { $0?[path] = self }
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try FileManager.default.setAttributes([.protectionKey: fileProtectionType], ofItemAtPath: path)
        #endif
    }

    /// Tests: every class given to a file, by path, once set (on every platform: Linux has no
    /// classes, but what RevSync asks for is recorded all the same).
    static let applied = Locked<[String: StoreFileProtection]?>(nil)
}

extension LocalStore {
    /// The data-protection class of the store's files (Apple platforms): kept in the store, given
    /// to its files when the store opens and to every file it creates.
    public var fileProtection: StoreFileProtection { fileProtectionClass.current }

    /// Gives the store's files `protection` from now on, and keeps it for every later open.
    ///
    /// - Throws: when the platform refuses the class for a file (the store keeps the class it
    ///   had).
    public func setFileProtection(_ protection: StoreFileProtection) async throws {
        let previous = fileProtectionClass.withLock { previous in
            defer { previous = protection }
            return previous
        }
        do {
            try applyFileProtection()
            try await ownWrite { db in try StoreState(db: db).set(.fileProtection, protection.rawValue) }
        } catch {
            fileProtectionClass.withLock { $0 = previous }
            try? applyFileProtection()
            throw error
        }
    }

    /// Gives every file of the store that holds its data (``StoreFiles/dataPaths()``: the ones a
    /// wipe removes) the store's class.
    func applyFileProtection() throws {
        let protection = fileProtection
        for path in files.dataPaths() { try protection.apply(to: path) }
    }

    /// The class kept in the store (the default when none was set, or when what is kept is not
    /// a class this version knows).
    static func keptFileProtection(in pool: DatabasePool) throws -> StoreFileProtection {
        try pool.read { db in try StoreState(db: db).string(.fileProtection) }.flatMap(StoreFileProtection.init(rawValue:))
            ?? .completeUntilFirstUserAuthentication
    }
}
