import Foundation
public import Observation
public import RevSyncClient

/// One line of the roster: a membership with its player and team, and whether the player's
/// latest edit waits to be sent or was refused.
public struct RosterLine: FetchableRecord, Identifiable, Sendable, CustomStringConvertible {
    public var teamPlayer: TeamPlayer
    public var player: Player
    public var team: Team
    /// The player's row state: pending (an edit waits to be sent), refused (the server said no).
    public var syncState: RowSyncState?

    public var id: RecordID { teamPlayer.id }

    public init(row: Row) throws {
        teamPlayer = try TeamPlayer(row: row)
        guard let player = row.scopes["player"], let team = row.scopes["team"] else { throw RosterError.incompleteRow }
        self.player = try Player(row: player)
        self.team = try Team(row: team)
        // A player in sync has no row state: the left join's columns are all null.
        syncState = try player.scopes["syncState"].flatMap { $0.containsNonNullValue ? try RowSyncState(row: $0) : nil }
    }

    /// `#8 Ana Lopez, Forward (U12 Lions) [photo ana.png]`.
    public var description: String {
        let photo = player.photo.map { " [photo \($0.name ?? $0.sha256.prefix(8) + "…")]" } ?? ""
        return
            "#\(teamPlayer.jerseyNumber.map(String.init) ?? "-") \(player.firstName) \(player.lastName), \(player.position ?? "?") (\(team.name))\(photo)"
    }

    /// The request: every membership with its player (and the player's row state) and team, by
    /// jersey number.
    public static func all() -> QueryInterfaceRequest<RosterLine> {
        TeamPlayer
            .including(required: TeamPlayer.player.including(optional: Player.syncState))
            .including(required: TeamPlayer.team)
            .order(TeamPlayer.Columns.jerseyNumber)
            .asRequest(of: RosterLine.self)
    }
}

/// A roster row lacked its player or team.
public enum RosterError: Error {
    /// The joined row had no player or no team.
    case incompleteRow
}

/// The roster screen's state: the lines, kept current by a `ValueObservation` (local writes,
/// syncs and live pushes alike), and the writes the screen makes.
@MainActor @Observable
public final class RosterModel {
    /// The roster, by jersey number.
    public private(set) var lines: [RosterLine] = []
    /// Why the roster could not be read, if it could not.
    public private(set) var failure: String?

    @ObservationIgnored public let store: LocalStore

    public init(store: LocalStore) {
        self.store = store
    }

    /// Follows the roster until the calling task is cancelled (SwiftUI: `.task { await model.observe() }`).
    public func observe() async {
        do {
            for try await lines in ValueObservation.tracking(RosterLine.all().fetchAll).values(in: store.database) {
                self.lines = lines
            }
        } catch is CancellationError {
        } catch {
            failure = "\(error)"
        }
    }

    /// Moves a player to another position: one write transaction, one change set.
    public func setPosition(_ position: String, of player: Player) async throws {
        try await store.database.write { db in
            var player = player
            player.position = position
            try player.update(db)
        }
    }
}
