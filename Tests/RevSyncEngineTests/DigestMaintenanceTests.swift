import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// The digest the server keeps with its revision counter moves with every kind of write, so it
/// always equals the digest of every record computed from scratch: a device compares against it
/// on every sync, and a wrong one would send every device into a repair.
@Suite struct DigestMaintenanceTests {
    @Test(arguments: StoreKind.all)
    func theKeptDigestFollowsEveryKindOfWrite(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            try await Self.expectKeptDigestIsComputed(server, "a new database")
            let device = try await server.device()
            let (coach, coachRevision) = try await device.create("users", ["first_name": "C", "last_name": "D"])
            let (team, teamRevision) = try await device.create("teams", ["name": "U12", "coach_id": .integer(coach.rawValue)])
            let (player, playerRevision) = try await device.create(
                "players", ["first_name": "Ann", "last_name": "Bo", "height_cm": 171.5, "active": true])
            let link = try await device.create(
                "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue), "jersey_number": 7])
            try await Self.expectKeptDigestIsComputed(server, "after creates")

            let update = ChangeSet.new().updating("players", player, base: playerRevision, ["position": "wing", "height_cm": .null])
            let updated = try #require(try await device.sync([update]).outcome(of: update.id)?.revision)
            try await Self.expectKeptDigestIsComputed(server, "after an update")

            // A delete that nullifies a reference elsewhere.
            _ = try await device.sync([ChangeSet.new().deleting("users", coach, base: coachRevision)])
            try await Self.expectKeptDigestIsComputed(server, "after a nullifying delete")

            // A revert of the update (the player's old values come back).
            _ = try await server.engine.revert(.revision(updated), by: .server)
            try await Self.expectKeptDigestIsComputed(server, "after a revert")

            // An attribute erased, then a record erased with its cascade.
            _ = try await server.engine.erase(
                RecordErasure.Request(entity: "players", id: player, attributes: ["first_name"], reason: "asked"), by: .server)
            try await Self.expectKeptDigestIsComputed(server, "after an attribute's erasure")
            _ = try await server.engine.erase(RecordErasure.Request(entity: "players", id: player, reason: "asked"), by: .server)
            #expect(try await server.record("team_players", link.id) == nil)
            try await Self.expectKeptDigestIsComputed(server, "after a record's erasure with its cascade")

            // A delete that cascades.
            let teamNow = try #require(try await server.record("teams", team)?["revision"]?.integerValue)
            #expect(teamNow > teamRevision)
            _ = try await device.sync([ChangeSet.new().deleting("teams", team, base: teamNow)])
            try await Self.expectKeptDigestIsComputed(server, "after a cascading delete")

            _ = try await DataSeeder(schema: server.schema).seed(records: 300, into: server.storage)
            try await Self.expectKeptDigestIsComputed(server, "after a seed")
            let kept = try #require(try await server.engine.auditDigest().kept?[server.schema.version])
            #expect(kept.total.count >= 300)
        }
    }

    static func expectKeptDigestIsComputed(
        _ server: InProcessServer, _ step: Comment, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let audit = try await server.engine.auditDigest()
        #expect(audit.kept == audit.computed, step, sourceLocation: sourceLocation)
        let latest = try #require(audit.computed[server.schema.version], step, sourceLocation: sourceLocation)
        for entity in server.schema.entities {
            #expect(latest[entity.name].count == Int64(try await server.count(entity.name)), step, sourceLocation: sourceLocation)
        }
    }
}
