import Foundation
public import RevSyncClient

/// Where the app's store lives, and how it is opened at launch.
///
/// The store is one SQLite file holding the whole data set, the outbox of changes not yet sent,
/// and the server's address (the token stays in the ``TokenStore``, out of the file that device
/// backups carry): `Application Support/ClubRoster/roster.sqlite` on Apple
/// platforms (backed up, never purged by the system), the directory given elsewhere. Open it
/// once at launch and keep it for the app's life; every screen reads and writes through
/// `store.database`.
public enum ClubDatabase {
    /// The schema the app was built for: the file `revsync generate swift` made `Records.swift`
    /// from, bundled, so that previews and tests need no server.
    public static func bundledSchema() throws -> Schema {
        guard let url = Bundle.module.url(forResource: "schema", withExtension: "json") else {
            throw ClubDatabaseError.missingSchema
        }
        return try Schema(json: [UInt8](try Data(contentsOf: url)))
    }

    /// The store's file in `directory` (on Apple platforms, ``defaultDirectory()``).
    public static func storePath(in directory: URL) -> String {
        directory.appending(path: "roster.sqlite").path
    }

    /// `Application Support/ClubRoster`, made if missing.
    public static func defaultDirectory() throws -> URL {
        let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        let directory = support.appending(path: "ClubRoster", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The store at launch and the synchronizer that syncs it with the device's token.
    public struct Opened: Sendable {
        public var store: LocalStore
        public var synchronizer: Synchronizer
    }

    /// The store at launch: the one on disk, pinned to the version this build's types were
    /// generated from (after an app update, its next sync upgrades it in place first); or, on
    /// the first launch (and after a reinstall, which deletes the file but not the Keychain), a
    /// new one started from the server's snapshot of that version. The token stays in `tokens`:
    /// the synchronizer is given it, the store keeps only the server's address.
    ///
    /// - Throws: ``ClubDatabaseError/noToken`` when the device has no token yet (show the sign-in
    ///   screen); ``ClubDatabaseError/wiped(_:)`` when the store was wiped (by the server's order
    ///   while the app was not running, or by its offline lease as it opened now): its receipt
    ///   was sent (or is kept for the next try) and the token removed; show the wiped screen.
    public static func openAtLaunch(directory: URL, server: URL, tokens: any TokenStore) async throws -> Opened {
        let path = storePath(in: directory)
        guard let token = try tokens.token() else { throw ClubDatabaseError.noToken }
        let connection = LocalStore.ServerConnection(url: server, token: token)
        let store: LocalStore
        do {
            if FileManager.default.fileExists(atPath: path) || LocalStore.wipeReport(at: path) != nil {
                store = try LocalStore.open(at: path)
                // Open, pin, sync: an updated app's store follows its new types from the next sync
                // on, whatever the server answers to the old version (SchemaVersions in the DocC catalog).
                try await store.pin(toSchemaVersion: max(Player.schemaVersion, store.schema.version))
            } else {
                // The server's snapshot of the version this app was built for (a store file,
                // checked before it is opened), pinned to it, then only what changed since: a new
                // device is ready in a second, whatever version the server runs.
                store = try await LocalStore.bootstrap(
                    at: path, downloadingFrom: connection, pinnedTo: Player.schemaVersion, storingToken: false
                ).store
            }
        } catch let error as LocalStoreError where error.code == .wiped {
            throw try await forgetWiped(at: path, connection: connection, tokens: tokens)
        }
        return Opened(store: store, synchronizer: Synchronizer(store: store, server: connection))
    }

    /// After a wipe: the receipt (the network may keep it back: the store's path then keeps what
    /// a later try needs, not the token), the token removed, and what the wipe removed.
    public static func forgetWiped(
        at path: String, connection: LocalStore.ServerConnection, tokens: any TokenStore
    ) async throws
        -> ClubDatabaseError
    {
        let sent = try? await LocalStore.sendWipeReceipt(at: path, server: connection)
        try tokens.remove()
        guard let report = sent ?? LocalStore.wipeReport(at: path) else { return ClubDatabaseError.noToken }
        return ClubDatabaseError.wiped(report)
    }

    /// A store with no server, filled with a small roster: for SwiftUI previews and tests.
    /// Writes to it are queued as change sets that never leave.
    public static func preview(at path: String? = nil) throws -> LocalStore {
        let path = path ?? FileManager.default.temporaryDirectory.appending(path: "roster-preview-\(UUID().uuidString).sqlite").path
        let store = try LocalStore.create(at: path, schema: try bundledSchema())
        try store.database.write { db in
            var team = Team(name: "U12 Lions", ageGroup: "U12")
            try team.insert(db)
            for (number, first, last, position) in [
                (8, "Ana", "Lopez", "Forward"), (4, "Ben", "Okafor", "Defender"), (1, "Chloe", "Martin", "Goalkeeper"),
            ] {
                var player = Player(firstName: first, lastName: last, position: position)
                try player.insert(db)
                _ = try TeamPlayer(teamID: team.id, playerID: player.id, jerseyNumber: Int64(number)).inserted(db)
            }
        }
        return store
    }
}

/// Why the store could not be opened.
public enum ClubDatabaseError: Error, Equatable {
    /// The device has no token: it has not been signed in (provisioned) yet.
    case noToken
    /// The app bundle lacks `schema.json`.
    case missingSchema
    /// The store was wiped: what it removed. The device needs a new token from the operator
    /// (`LocalStore.clearWipe(at:)` before it starts again).
    case wiped(WipeReport)
}
