import RevSyncProtocol

/// The schema version a store should be in, decided once per sync (and once per live stream,
/// and at a start from a snapshot): the version its app was built for, when the store is
/// pinned to it (``LocalStore/pin(toSchemaVersion:)``), or else the server's latest.
enum SchemaTarget: Sendable, Hashable {
    /// The app's version: followed up to, never past.
    case pinned(Int)
    /// Whatever the server serves newest.
    case latest

    /// The store's target now.
    static func of(_ store: LocalStore) async throws -> SchemaTarget {
        try await store.pinnedSchemaVersion.map(SchemaTarget.pinned) ?? .latest
    }

    /// Whether the store, holding `version`, must follow its pin before anything is sent: an
    /// app update, whatever the server would answer to the old version.
    func isAhead(of version: Int) -> Bool {
        if case .pinned(let pinned) = self { return pinned > version }
        return false
    }

    /// Whether a store holding `current` follows a server whose latest is `serverVersion`.
    func follows(serverVersion: Int?, from current: Int) -> Bool {
        guard let serverVersion, serverVersion > current else { return false }
        switch self {
        case .latest: return true
        case .pinned(let pinned): return pinned > current
        }
    }

    /// Whether a store whose version the server retired (`426`) follows the server's latest at
    /// once: only one that is not pinned; a pinned one waits for its app's update.
    var followsRetirement: Bool { self == .latest }
}
