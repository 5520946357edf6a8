import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The typed API against a real server: permission rules, temporary IDs replaced by the
/// server, observation of syncs and live pushes, the row sync state, a crash mid-write.
@Suite struct GRDBSyncTests {
    @Test func aForbiddenWriteRollsTheWholeTransactionBack() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .nullifyCatalogue) { server in
                let admin = try await server.device("admin", role: .admin)
                let ann = try await admin.create("people", ["name": "Ann"]).id
                let category = try await admin.create("categories", ["name": "Tools", "owner_id": .integer(ann.rawValue)]).id
                _ = try await admin.create("items", ["name": "saw", "category_id": .integer(category.rawValue)])
                let device = try await server.clientDevice("ann", in: directory, user: ann)
                _ = try await device.synchronizer.fetchDevice()
                try await device.sync()
                let before = try await device.store.contents()
                let error = await #expect(throws: LocalStoreError.self) {
                    try await device.store.database.write { db in
                        try db.execute(sql: "UPDATE people SET name = 'Ann B.' WHERE id = ?", arguments: [ann])
                        try db.execute(sql: "DELETE FROM categories WHERE id = ?", arguments: [category])
                    }
                }
                #expect(error?.code == .forbidden)
                #expect(error?.message.contains("would set its category_id to null, and category_id may be set only by admin") == true)
                #expect(try await device.store.contents() == before)
                #expect(try await device.store.pendingChangeSets().isEmpty)
                // The same transaction without the forbidden part goes through.
                try await device.store.database.write { db in
                    try db.execute(sql: "UPDATE people SET name = 'Ann B.' WHERE id = ?", arguments: [ann])
                }
                #expect(try await device.store.pendingChangeSets().count == 1)
            }
        }
    }

    @Test func temporaryIDsResolveAfterTheServerReplacesThem() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let team = try await device.store.database.write { db in
                    var team = Team(name: "U12")
                    try team.insert(db)
                    return team
                }
                #expect(team.id.isTemporary)
                let report = try await device.sync()
                let permanent = try #require(report.permanentIDs[RecordReference(entity: "teams", id: team.id)])
                #expect(!permanent.isTemporary)
                // Found under the permanent ID, no longer under the temporary one.
                let (found, stale) = try await device.store.database.read { db in
                    (try Team.fetchOne(db, id: permanent), try Team.fetchOne(db, id: team.id))
                }
                #expect(found?.name == "U12" && found?.revision != nil)
                #expect(stale == nil)
                // A value still holding the temporary ID as a reference: rewritten to the permanent one.
                try await device.store.database.write { db in
                    var note = Note(body: "kept", teamID: team.id)
                    try note.insert(db)
                }
                let note = try #require(try await device.store.database.read { db in try Note.fetchOne(db) })
                #expect(note.teamID == permanent)
                #expect(
                    try await device.store.pendingChangeSets().first?.changes(for: "notes")?.attributes.values.first?.values["team_id"]
                        == .integer(permanent.rawValue))
                try await device.sync()
                #expect(
                    try await server.record(
                        "notes", try #require(try await device.store.database.read { db in try Note.fetchOne(db)?.id }))?["team_id"]
                        == .integer(permanent.rawValue))
            }
        }
    }

    @Test func valueObservationSeesLocalWritesSyncsAndLivePushes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let other = try await server.clientDevice("laptop", in: directory)
                let observation = ValueObservation.tracking { db in try Venue.order(Venue.Columns.name).fetchAll(db).map(\.name) }
                let seen = Locked<[[String]]>([])
                let database = device.store.database
                let observer = Task {
                    for try await names in observation.values(in: database) { seen.withLock { $0.append(names) } }
                }
                defer { observer.cancel() }
                try await waitFor { seen.current.last == [] }
                try await device.store.database.write { db in
                    var venue = Venue(name: "North")
                    try venue.insert(db)
                }
                try await waitFor { seen.current.last == ["North"] }
                _ = try await other.table("venues").insert(["name": "East"])
                try await other.sync()
                try await device.sync()
                try await waitFor { seen.current.last == ["East", "North"] }
                // A live push: the device listens, another device commits.
                let live = Task { try await device.synchronizer.live() }
                defer { live.cancel() }
                try await Task.sleep(for: .milliseconds(300))
                _ = try await other.table("venues").insert(["name": "South"])
                try await other.sync()
                try await waitFor { seen.current.last == ["East", "North", "South"] }
            }
        }
    }

    @Test func aLiveDeviceSendsAGRDBWriteByItself() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let live = Task { try await device.synchronizer.live() }
                defer { live.cancel() }
                try await Task.sleep(for: .milliseconds(300))
                try await device.store.database.write { db in
                    var venue = Venue(name: "North")
                    try venue.insert(db)
                }
                for _ in 0..<200 where try await server.count("venues") == 0 {
                    try await Task.sleep(for: .milliseconds(25))
                }
                #expect(try await server.count("venues") == 1)
            }
        }
    }

    @Test func rowSyncStateShowsPendingAndRefusedRows() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let other = try await server.clientDevice("laptop", in: directory)
                let venue = try await device.table("venues").insert(["name": "North"])
                try await device.sync()
                let id = try #require(try await device.store.permanentID(of: venue))
                try await other.sync()
                // Two edits of the same record: the later one is refused.
                try await other.table("venues").update(id, ["capacity": 100])
                try await other.sync()
                try await device.store.database.write { db in
                    try Venue.filter(id: id).updateAll(db, Venue.Columns.capacity.set(to: 200))
                    var south = Venue(name: "South")
                    try south.insert(db)
                }
                struct VenueRow: Decodable, FetchableRecord {
                    var venue: Venue
                    var syncState: RowSyncState?
                    init(row: Row) throws {
                        venue = try Venue(row: row)
                        syncState = try row.scopes["syncState"].map { try RowSyncState(row: $0) }
                    }
                    init(from decoder: any Decoder) throws { fatalError("rows only") }
                }
                let request = Venue.including(optional: Venue.syncState).order(Venue.Columns.name).asRequest(of: VenueRow.self)
                let pending = try await device.store.database.read { db in try request.fetchAll(db) }
                #expect(pending.map(\.venue.name) == ["North", "South"])
                #expect(pending.map { $0.syncState?.pending } == [1, 1])
                #expect(pending.map { $0.syncState?.refused } == [false, false])
                let report = try await device.sync()
                #expect(report.conflicts.count == 1)
                let after = try await device.store.database.read { db in try request.fetchAll(db) }
                // The change set is refused whole: South's create went with it.
                #expect(after.map(\.venue.name) == ["North"])
                #expect(after.map { $0.syncState?.refused } == [true])
                #expect(after.map { $0.syncState?.pending } == [0])
                #expect(after[0].venue.capacity == 100)  // the server's truth
                let conflict = try #require(try await device.store.conflicts().first)
                try await device.store.dismissConflict(conflict.id)
                #expect(try await device.store.database.read { db in try RowSyncState.fetchCount(db) } == 0)
            }
        }
    }

    @Test(arguments: ["capture-row", "capture-committed"])
    func killedMidWriteLosesNothing(at stage: String) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("device", in: directory)
                _ = try await device.table("venues").insert(["name": "North"])
                try device.store.close()
                let killed = try ExecutableProcess(
                    "revsync",
                    ["sql", "--store", device.store.path, "INSERT INTO venues (name, capacity) VALUES ('East', 10), ('West', 20)"],
                    environment: ["REVSYNC_CRASH_AT": stage])
                _ = await killed.exitStatus()
                #expect(killed.wasKilled)
                let reopened = try LocalStore.open(at: device.store.path)
                let names = try await reopened.database.read { db in try Venue.order(Venue.Columns.name).fetchAll(db).map(\.name) }
                let pending = try await reopened.pendingChangeSets()
                if stage == "capture-row" {
                    // Killed inside the transaction: it never happened.
                    #expect(names == ["North"])
                    #expect(pending.count == 1)
                } else {
                    // Committed, not yet queued: queued when the store opened, as one change set.
                    #expect(names == ["East", "North", "West"])
                    #expect(pending.count == 2)
                    #expect(pending[1].changes(for: "venues")?.create.count == 2)
                }
                try await Synchronizer(store: reopened).sync()
                #expect(try await reopened.pendingChangeSets().isEmpty)
                #expect(try await server.count("venues") == names.count)
                #expect(try await reopened.contents() == server.contents())
            }
        }
    }

    private func waitFor(_ condition: @Sendable () -> Bool) async throws {
        for _ in 0..<200 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("timed out waiting")
    }
}
