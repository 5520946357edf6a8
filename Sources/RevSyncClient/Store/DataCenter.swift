/// App code that serves one feature by combining tables: the "strong business" half of the
/// persistence design, where ``Table`` is the "weak" half and records are any app types.
///
/// A data center belongs to its feature (a screen, a flow), not to the whole app: the case
/// study's dashboard has one that reads teams, team players, players, screens and screen
/// items and hands out view models; a settings screen would have another. Keep them small and
/// without overlap.
///
/// For example:
///
/// ```swift
/// struct TeamRow: ReadableRecord {
///     let id: RecordID, name: String
///     init(record: Record) throws { id = record.id; name = record.text("name") ?? "" }
/// }
///
/// struct DashboardDataCenter: DataCenter {
///     let store: LocalStore
///
///     /// Each team with the names of its players, read in one consistent view.
///     func squads() async throws -> [(team: TeamRow, players: [String])] {
///         try await store.read { reader in
///             try reader.fetch("teams", as: TeamRow.self, orderBy: ["name"]).map { team in
///                 let links = try reader.fetch("team_players", where: ["team_id": .integer(team.id.rawValue)])
///                 let players = try links.compactMap { try reader.find("players", id: $0.reference("player_id")!) }
///                 return (team, players.map { $0.text("last_name") ?? "" })
///             }
///         }
///     }
/// }
/// ```
public protocol DataCenter: Sendable {
    /// The store the feature reads and writes.
    var store: LocalStore { get }
}

extension DataCenter {
    /// The single-entity operations of `entity`.
    public func table(_ entity: String) -> Table {
        store.table(entity)
    }
}
