public import GRDB
public import RevSyncProtocol

/// Where a row stands with the server, from the read-only view `revsync_row_state`: one row
/// per record that a queued change set names (`pending`: how many) or that a refusal nobody
/// dismissed names (`refused`). Records in neither are in sync and have no row.
///
/// A list joins it to show "waiting to sync" and "refused" badges:
///
/// ```swift
/// let rows = try Player
///     .including(optional: Player.syncState)
///     .asRequest(of: PlayerRow.self)          // struct PlayerRow: Decodable, FetchableRecord
///     .fetchAll(db)                           // { var player: Player; var syncState: RowSyncState? }
/// ```
///
/// or, in SQL:
///
/// ```sql
/// SELECT players.*, s.pending, s.refused FROM players
/// LEFT JOIN revsync_row_state s ON s.entity = 'players' AND s.id = players.id
/// ```
public struct RowSyncState: FetchableRecord, TableRecord, Codable, Hashable, Sendable {
    public static let databaseTableName = "revsync_row_state"

    /// The columns of the view.
    public enum Columns {
        /// The entity of the record.
        public static let entity = Column("entity")
        /// The record's ID.
        public static let id = Column("id")
        /// How many queued change sets name the record.
        public static let pending = Column("pending")
        /// Whether an undismissed refusal names the record.
        public static let refused = Column("refused")
    }

    /// The entity of the record.
    public var entity: String
    /// The record's ID (a temporary ID the server has replaced reads as the permanent one).
    public var id: RecordID
    /// How many queued change sets name the record: it is waiting to sync while above 0.
    public var pending: Int
    /// Whether a refusal nobody dismissed names it (see ``LocalStore/conflicts(includingDismissed:)``).
    public var refused: Bool

    /// A row of the view, as its columns say.
    public init(entity: String, id: RecordID, pending: Int, refused: Bool) {
        self.entity = entity
        self.id = id
        self.pending = pending
        self.refused = refused
    }

    public init(row: Row) throws {
        entity = row["entity"]
        id = row["id"]
        pending = row["pending"] ?? 0
        refused = row["refused"] ?? false
    }

    /// Whether a queued change set names the record.
    public var isPending: Bool { pending > 0 }
}

extension RevSyncRecord {
    /// The record's sync state (`nil` when it is in sync), for
    /// `including(optional: Player.syncState)`.
    public static var syncState: HasOneAssociation<Self, RowSyncState> {
        hasOne(RowSyncState.self, key: "syncState", using: ForeignKey([RowSyncState.Columns.id], to: [Column("id")]))
            .filter(RowSyncState.Columns.entity == databaseTableName)
    }
}
