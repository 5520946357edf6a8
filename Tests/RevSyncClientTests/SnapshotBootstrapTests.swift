import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// New devices start from a snapshot file (`revsync-server snapshot`), then sync what changed.
@Suite struct SnapshotBootstrapTests {
    /// Runs `revsync-server snapshot` on the live server's database.
    static func snapshot(_ server: LiveServer, to file: String) async throws {
        let result = try await ExecutableProcess.run("revsync-server", ["snapshot", "--database", server.database, "--out", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("SHA-256"))
    }

    /// Some of everything, with references between records.
    static func work(_ device: ClientDevice, _ label: String) async throws {
        try await device.store.write { transaction in
            let season = try transaction.insert(into: "seasons", ["name": .text("Season \(label)")])
            let team = try transaction.insert(into: "teams", ["name": .text("Team \(label)"), "season_id": .integer(season.rawValue)])
            for index in 0..<5 {
                let player = try transaction.insert(into: "players", ["first_name": .text("P\(index)\(label)"), "last_name": "X"])
                try transaction.insert(into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
            }
        }
        try await device.sync()
    }

    /// A device that made some data and synced it, and a snapshot of the server taken then.
    static func authorAndSnapshot(
        _ server: LiveServer, in directory: TemporaryDirectory, rounds: Int = 1
    ) async throws -> (author: ClientDevice, file: String) {
        let author = try await server.clientDevice("author", in: directory)
        for round in 0..<rounds { try await work(author, "r\(round)") }
        let file = directory.file("data.revsync")
        try await snapshot(server, to: file)
        return (author, file)
    }

    func newDevice(_ name: String, _ server: LiveServer) async throws -> LocalStore.ServerConnection {
        let (_, token) = try await Token.create(name: name, role: .member, in: server.storage)
        return LocalStore.ServerConnection(url: server.url, token: token)
    }

    @Test func aDeviceStartedFromASnapshotEqualsOneThatSyncedEverything() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (author, file) = try await Self.authorAndSnapshot(server, in: directory, rounds: 3)
                // Work after the snapshot: the new device must catch up on it.
                try await Self.work(author, "after")
                let renamed = try #require(try await author.table("teams").all().first?.id)
                try await author.table("teams").update(renamed, ["name": "Renamed"])
                try await author.sync()

                let identity = try await ServerIdentity.fetch(from: server.url)
                let connection = try await newDevice("newcomer", server)
                let store = try LocalStore.bootstrap(
                    at: directory.file("newcomer.sqlite"), from: file, expecting: identity, server: connection)
                let atSnapshot = try await store.status().maxRevision
                #expect(atSnapshot == 3)
                let report = try await Synchronizer(store: store).sync()
                #expect(!report.snapshot)
                #expect(report.received == 2)

                // The same as a device that got everything as JSON, record for record.
                var jsonOnly = Synchronizer.Configuration()
                jsonOnly.startFromSnapshot = false
                let full = try await server.clientDevice("full", in: directory)
                #expect(try await Synchronizer(store: full.store, configuration: jsonOnly).sync().snapshot)
                #expect(try await store.contents() == server.contents())
                #expect(try await store.contents() == full.store.contents())
                // And it works as a device: its edits reach the server.
                try await store.table("venues").insert(["name": "Pitch 9"])
                #expect(try await Synchronizer(store: store).sync().committed.count == 1)
                try store.close()
            }
        }
    }

    /// An empty store's first sync starts from the server's snapshot by itself, then brings
    /// only what was committed since; it ends where a JSON full sync ends.
    @Test func anEmptyStoreStartsFromTheServersSnapshotByItself() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let maker = try await server.clientDevice("maker", in: directory)
                try await Self.work(maker, "A")
                let newcomer = try await server.clientDevice("newcomer", in: directory)
                let report = try await newcomer.sync()
                let started = try #require(report.startedFromSnapshot)
                #expect(started.revision == 1 && started.records == 12 && started.gzipBytes > 0)
                #expect(!report.snapshot && report.received == 0 && report.maxRevision == 1)
                #expect(try await newcomer.store.contents() == server.contents())
                // The download's files (the compressed file, its state, the decompressed copy of
                // the data set) are removed alongside the exchange, and gone when the sync returns.
                let left = try Self.downloadLeftovers(of: newcomer.store, in: directory)
                #expect(left.isEmpty, "\(left)")

                // Later commits come as usual, and the device works as any other.
                try await Self.work(maker, "B")
                let next = try await newcomer.sync()
                #expect(next.startedFromSnapshot == nil && next.received == 1)
                try await newcomer.table("venues").insert(["name": "Pitch 9"])
                #expect(try await newcomer.sync().committed.count == 1)
                #expect(try await newcomer.store.contents() == server.contents())
            }
        }
    }

    /// A snapshot of several mebibytes (its records committed before its indexes are built,
    /// while the server may compress their pieces ahead, `Gzip.PiecesAhead`; which pieces serve
    /// is `GzipFileCompressionTests`'): the device that starts from it holds the server's
    /// records, proven.
    @Test(arguments: StoreKind.all)
    func aSnapshotOfSeveralMebibytesStartsADeviceProven(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                _ = try await DataSeeder(schema: server.schema).seed(records: 80_000, into: server.storage)
                let newcomer = try await server.clientDevice("newcomer", in: directory)
                let report = try await newcomer.sync()
                let started = try #require(report.startedFromSnapshot)
                #expect(started.records == 80_000 && started.gzipBytes > 1 << 20)
                #expect(report.verified == true)
                #expect(try await newcomer.store.contents() == server.contents())
            }
        }
    }

    /// The answer to the request after the import is lost: the sync fails, and the download's
    /// files are gone all the same when it does; the next sync brings the answer (the store
    /// starts from the snapshot only once).
    @Test func theDownloadsFilesAreRemovedWhenTheSyncAfterTheImportFails() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let maker = try await server.clientDevice("maker", in: directory)
                try await Self.work(maker, "A")
                let lossy = LossyTransport()
                let newcomer = try await server.clientDevice("newcomer", in: directory, transport: lossy)
                try await newcomer.table("venues").insert(["name": "Offline pitch"])
                lossy.dropNextResponse()
                await #expect(throws: (any Error).self) { try await newcomer.sync() }
                let left = try Self.downloadLeftovers(of: newcomer.store, in: directory)
                #expect(left.isEmpty, "\(left)")
                let next = try await newcomer.sync()
                #expect(next.startedFromSnapshot == nil && next.committed.count == 1)
                #expect(try await newcomer.store.contents() == server.contents())
            }
        }
    }

    /// The files next to `store` that are not its own (the database, its WAL and shared memory,
    /// its attachments): what a start from the snapshot left.
    static func downloadLeftovers(of store: LocalStore, in directory: TemporaryDirectory) throws -> [String] {
        let name = URL(fileURLWithPath: store.path).lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix(name) && ![name, name + "-wal", name + "-shm", name + "-attachments"].contains($0)
        }
    }

    /// Not when told not to (the JSON full sync), and not for a store that holds something of
    /// the server's; a device that wrote before its first sync starts from the snapshot with
    /// its own records and sends them.
    @Test func notWhenToldNotToOrWhenTheStoreHoldsSomethingOfTheServers() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let maker = try await server.clientDevice("maker", in: directory)
                try await Self.work(maker, "A")
                var jsonOnly = Synchronizer.Configuration()
                jsonOnly.startFromSnapshot = false
                let told = try await server.clientDevice("told", in: directory)
                let toldReport = try await Synchronizer(store: told.store, configuration: jsonOnly).sync()
                #expect(toldReport.startedFromSnapshot == nil && toldReport.snapshot)

                let busy = try await server.clientDevice("busy", in: directory)
                try await busy.table("venues").insert(["name": "Offline pitch"])
                let busyReport = try await busy.sync()
                #expect(busyReport.startedFromSnapshot != nil && !busyReport.snapshot && busyReport.committed.count == 1)
                #expect(try await busy.store.contents() == server.contents())
                #expect(try await told.store.contents() == (try await maker.store.contents()))

                // A store that synced (it holds the server's revision) never starts over from a snapshot.
                try await Self.work(maker, "B")
                try await told.table("venues").insert(["name": "Later pitch"])
                let later = try await told.sync()
                #expect(later.startedFromSnapshot == nil && !later.snapshot && later.committed.count == 1)
            }
        }
    }

    @Test func aSnapshotTakenUnderWritesIsConsistent() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let author = try await server.clientDevice("author", in: directory)
                try await Self.work(author, "start")
                let writing = Task {
                    for round in 0..<15 { try await Self.work(author, "w\(round)") }
                }
                try await Task.sleep(for: .milliseconds(30))
                let file = directory.file("busy.revsync")
                try await Self.snapshot(server, to: file)
                try await writing.value

                let store = try LocalStore.bootstrap(
                    at: directory.file("newcomer.sqlite"), from: file, expecting: try await ServerIdentity.fetch(from: server.url),
                    server: try await newDevice("newcomer", server))
                // Every team_player of the snapshot has its team and its player: one revision's state.
                let (teams, players, links) = try await store.read { reader in
                    (Set(try reader.fetch("teams").map(\.id)), Set(try reader.fetch("players").map(\.id)), try reader.fetch("team_players"))
                }
                #expect(links.count == 5 * (teams.count))
                for link in links {
                    #expect(link.reference("team_id").map(teams.contains) == true)
                    #expect(link.reference("player_id").map(players.contains) == true)
                }
                try await Synchronizer(store: store).sync()
                #expect(try await store.contents() == server.contents())
                try store.close()
            }
        }
    }

    @Test func foreignDamagedOrTruncatedSnapshotsAreRefusedAndNothingIsCreated() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (_, file) = try await Self.authorAndSnapshot(server, in: directory)
                let identity = try await ServerIdentity.fetch(from: server.url)
                let target = directory.file("device.sqlite")

                func refused(_ code: LocalStoreError.Code, from snapshot: String, expecting: ServerIdentity?) {
                    #expect {
                        _ = try LocalStore.bootstrap(at: target, from: snapshot, expecting: expecting)
                    } throws: { ($0 as? LocalStoreError)?.code == code }
                    #expect(!FileManager.default.fileExists(atPath: target))
                }
                refused(.wrongDataset, from: file, expecting: ServerIdentity(dataset: "another", schemaVersion: identity.schemaVersion))
                refused(
                    .schemaMismatch, from: file,
                    expecting: ServerIdentity(dataset: identity.dataset, schemaVersion: identity.schemaVersion + 1))

                // One byte changed: the published checksum no longer matches.
                var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
                let damaged = directory.file("damaged.revsync")
                bytes[bytes.count / 2] ^= 0xFF
                try bytes.write(to: URL(fileURLWithPath: damaged))
                try FileManager.default.copyItem(atPath: file + ".sha256", toPath: damaged + ".sha256")
                refused(.corrupt, from: damaged, expecting: identity)

                // Cut short, as by an interrupted download, without a checksum file: SQLite's check.
                let truncated = directory.file("truncated.revsync")
                try Data(contentsOf: URL(fileURLWithPath: file)).prefix(8192).write(to: URL(fileURLWithPath: truncated))
                refused(.corrupt, from: truncated, expecting: identity)

                // The intact one works.
                let store = try LocalStore.bootstrap(at: target, from: file, expecting: identity)
                try store.close()
            }
        }
    }

    @Test func bootstrappingNeverReplacesAStoreWithPendingChanges() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (_, file) = try await Self.authorAndSnapshot(server, in: directory)

                // A device with an edit not yet synced.
                let device = try await server.clientDevice("busy", in: directory)
                try await device.table("venues").insert(["name": "Not synced"])
                let before = try await device.store.contents()
                try device.store.close()
                let path = directory.file("busy.sqlite")
                #expect {
                    _ = try LocalStore.bootstrap(at: path, from: file, replacing: true)
                } throws: { ($0 as? LocalStoreError)?.code == .pendingChanges }
                // Without `replacing`, the existing store is opened as it is.
                let reopened = try LocalStore.bootstrap(at: path, from: file)
                #expect(try await reopened.contents() == before)
                #expect(try await reopened.status().pendingChangeSets == 1)
                try reopened.close()
            }
        }
    }

    @Test func revsyncInitFromASnapshotThenSync() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (author, file) = try await Self.authorAndSnapshot(server, in: directory)
                try await Self.work(author, "later")
                let connection = try await newDevice("terminal", server)
                let store = directory.file("terminal.sqlite")
                let created = try await ExecutableProcess.run(
                    "revsync",
                    [
                        "init", "--store", store, "--server", server.url.absoluteString, "--token", connection.token, "--snapshot", file,
                        "--json",
                    ])
                #expect(created.status == 0, "\(created.stderr)")
                #expect(created.stdout.contains("\"maxRevision\":1"))
                let synced = try await ExecutableProcess.run("revsync", ["sync", "--store", store, "--json"])
                #expect(synced.status == 0, "\(synced.stderr)")
                #expect(synced.stdout.contains("\"snapshot\":false"))
                let opened = try LocalStore.open(at: store)
                #expect(try await opened.contents() == server.contents())
                try opened.close()
            }
        }
    }

    /// `snapshot` takes the schema from the database (a club data set is written with the club's
    /// tables, no `--schema` needed); a `--schema` that is not the served one is refused, and one
    /// that names nothing lists the built-in schemas.
    @Test func snapshotReadsTheSchemaFromTheDatabase() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.file("club.sqlite")
            let setUp = try await ExecutableProcess.run(
                "revsync-server", ["seed", "--database", database, "--schema", "club", "--records", "100", "--create"])
            #expect(setUp.status == 0, "\(setUp.stderr)")
            let snapshot = try await ExecutableProcess.run(
                "revsync-server", ["snapshot", "--database", database, "--out", directory.file("club.revsync")])
            #expect(snapshot.status == 0, "\(snapshot.stderr)")
            #expect(snapshot.stdout.contains("schema version \(Schema.club.version)"), "\(snapshot.stdout)")
            let store = try LocalStore.bootstrap(at: directory.file("device.sqlite"), from: directory.file("club.revsync"))
            #expect(store.schema.jsonBytes() == Schema.club.jsonBytes())
            try store.close()

            let wrong = try await ExecutableProcess.run(
                "revsync-server", ["snapshot", "--database", database, "--schema", "demo", "--out", directory.file("demo.revsync")])
            #expect(wrong.status != 0)
            #expect(wrong.stderr.contains("is not the schema"), "\(wrong.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.file("demo.revsync")))

            let typo = try await ExecutableProcess.run(
                "revsync-server", ["serve", "--database", database, "--schema", "clubb", "--port", "0"])
            #expect(typo.status != 0)
            #expect(typo.stderr.contains("--schema clubb is neither a schema file nor a built-in schema (club, demo)"), "\(typo.stderr)")
        }
    }
}
