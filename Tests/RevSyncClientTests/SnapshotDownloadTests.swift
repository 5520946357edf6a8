import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `GET /snapshot`, and new devices that start from it: caching, entity tags, ranges, resume,
/// and what is refused.
@Suite struct SnapshotDownloadTests {
    typealias Setup = SnapshotBootstrapTests

    /// A live server whose snapshots go to `directory` and are made every `interval` revisions,
    /// with some data from an author device.
    func withSnapshotServer(
        store: StoreKind = .sqlite, interval: Int = 1000, _ body: (LiveServer, TemporaryDirectory, ClientDevice) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(
                store: store,
                configure: {
                    $0.snapshotDirectory = directory.file("snapshots")
                    $0.snapshotInterval = interval
                }
            ) { server in
                let author = try await server.clientDevice("author", in: directory)
                try await Setup.work(author, "a")
                try await body(server, directory, author)
            }
        }
    }

    func get(_ server: LiveServer, token: String?, _ headers: [(String, String)] = []) async throws -> RawHTTPResponse {
        try await server.send("GET", "/snapshot", headers: (token.map { [("Authorization", "Bearer \($0)")] } ?? []) + headers)
    }

    func token(_ server: LiveServer, _ name: String = "reader") async throws -> String {
        try await Token.create(name: name, role: .member, in: server.storage).token
    }

    func snapshotFiles(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.file("snapshots")).filter { $0.hasSuffix(".gz") }
    }

    @Test(arguments: StoreKind.all)
    func theSnapshotIsTheDataSetAsAStoreGzipWithAnEntityTag(store: StoreKind) async throws {
        try await withSnapshotServer(store: store) { server, directory, _ in
            #expect(try await get(server, token: nil).status == 401)
            #expect(try await get(server, token: "not-a-token").status == 401)
            let token = try await token(server)

            let response = try await get(server, token: token, [("Accept-Encoding", "gzip")])
            #expect(response.status == 200)
            #expect(response.header("Content-Encoding") == "gzip")
            #expect(response.header("Content-Type") == "application/vnd.sqlite3")
            #expect(response.header("Accept-Ranges") == "bytes")
            #expect(response.header("X-RevSync-Revision") == "1")
            #expect(response.header("X-RevSync-Schema-Version") == String(Schema.demo.version))
            #expect(Int(response.header("Content-Length") ?? "") == response.body.count)
            let etag = try #require(response.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))

            // The body is the store file: checksum as announced, and a store of the server's data.
            let store = try Gzip.decompress(response.body, limit: 1 << 30)
            #expect(Array(store.prefix(16)) == Array("SQLite format 3\0".utf8))
            let file = directory.file("got.revsync")
            try Data(store).write(to: URL(fileURLWithPath: file))
            #expect(try SnapshotFile.sha256(ofFile: file) == response.header("X-RevSync-Snapshot-SHA256"))
            #expect(store.count == Int(response.header("X-RevSync-Snapshot-Length") ?? ""))
            let opened = try LocalStore.bootstrap(
                at: directory.file("opened.sqlite"), from: file,
                expectedSHA256: response.header("X-RevSync-Snapshot-SHA256"))
            #expect(try await opened.contents() == server.contents())
            try opened.close()

            // Without Accept-Encoding: the same bytes, labelled as a gzip file.
            let plain = try await get(server, token: token)
            #expect(plain.status == 200)
            #expect(plain.header("Content-Encoding") == nil)
            #expect(plain.header("Content-Type") == "application/gzip")
            #expect(plain.body == response.body)
            #expect(plain.header("ETag") == etag)

            // An unchanged snapshot is not sent twice.
            let again = try await get(server, token: token, [("If-None-Match", etag)])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            #expect(again.header("ETag") == etag)
            #expect(try await get(server, token: token, [("If-None-Match", "\"other\", \(etag)")]).status == 304)
            #expect(try await get(server, token: token, [("If-None-Match", "\"other\"")]).status == 200)
            #expect(try snapshotFiles(directory).count == 1)
        }
    }

    @Test func aSnapshotIsMadeAtMostOncePerRevisionInterval() async throws {
        try await withSnapshotServer(interval: 3) { server, directory, author in
            let token = try await token(server)
            let first = try await get(server, token: token)
            #expect(first.header("X-RevSync-Revision") == "1")

            // Two revisions later: still the same snapshot; a device catches up the rest.
            try await author.table("venues").insert(["name": "V1"])
            try await author.sync()
            try await author.table("venues").insert(["name": "V2"])
            try await author.sync()
            #expect(try await server.revision() == 3)
            let second = try await get(server, token: token)
            #expect(second.header("ETag") == first.header("ETag"))
            #expect(second.body == first.body)

            // Three revisions past it: a new one, at the current revision.
            try await author.table("venues").insert(["name": "V3"])
            try await author.sync()
            let third = try await get(server, token: token)
            #expect(third.header("X-RevSync-Revision") == "4")
            #expect(third.header("ETag") != first.header("ETag"))
            #expect(try await get(server, token: token, [("If-None-Match", first.header("ETag")!)]).status == 200)

            // Many devices at once still get one new snapshot.
            for name in ["V4", "V5", "V6"] {
                try await author.table("venues").insert(["name": .text(name)])
                try await author.sync()
            }
            let tags = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<8 { group.addTask { try await get(server, token: token).header("ETag") } }
                return try await group.reduce(into: Set<String?>()) { $0.insert($1) }
            }
            #expect(tags.count == 1)
            // The two newest stay on disk (a download of the previous one may be under way).
            #expect(try snapshotFiles(directory).count == 2)
        }
    }

    @Test func theSnapshotOnDiskOutlivesARestartAndADamagedOneIsMadeAgain() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                let configure: (inout ServerConfiguration) -> Void = { $0.snapshotDirectory = directory.file("snapshots") }
                let first: [String] = try await withLiveServer(database: database, configure: configure) { server in
                    let author = try await server.clientDevice("author", in: directory)
                    try await Setup.work(author, "a")
                    let token = try await self.token(server)
                    let response = try await self.get(server, token: token)
                    return [token, response.header("ETag") ?? ""]
                }
                let token = first[0]
                let etag = first[1]
                try await withLiveServer(database: database, configure: configure) { (server: LiveServer) async throws in
                    // Made by the previous run: not made again.
                    #expect(try await self.get(server, token: token, [("If-None-Match", etag)]).status == 304)
                    #expect(try self.snapshotFiles(directory).count == 1)
                }
                // A snapshot file damaged on disk (a flipped byte, a lost tail) is not served: a
                // new one is made.
                for damage in ["flip", "truncate"] {
                    let file = directory.file("snapshots/" + (try snapshotFiles(directory).first ?? ""))
                    let handle = try #require(FileHandle(forUpdatingAtPath: file))
                    if damage == "flip" {
                        try handle.seek(toOffset: 50)
                        let byte = try #require(try handle.read(upToCount: 1)?.first)
                        try handle.seek(toOffset: 50)
                        try handle.write(contentsOf: [byte ^ 0xFF])
                    } else {
                        try handle.truncate(atOffset: 100)
                    }
                    try handle.close()
                    try await withLiveServer(database: database, configure: configure) { (server: LiveServer) async throws in
                        let response = try await self.get(server, token: token)
                        #expect(response.status == 200)
                        let store = try Gzip.decompress(response.body, limit: 1 << 30)
                        #expect(store.count == Int(response.header("X-RevSync-Snapshot-Length") ?? ""))
                    }
                    #expect(!FileManager.default.fileExists(atPath: file), "the damaged snapshot is removed")
                    #expect(try snapshotFiles(directory).count == 1)
                }
            }
        }
    }

    @Test func rangesServePartsOfTheSameBytes() async throws {
        try await withSnapshotServer { server, _, _ in
            let token = try await token(server)
            let whole = try await get(server, token: token)
            let etag = try #require(whole.header("ETag"))
            let length = whole.body.count

            let part = try await get(server, token: token, [("Range", "bytes=10-19")])
            #expect(part.status == 206)
            #expect(part.header("Content-Range") == "bytes 10-19/\(length)")
            #expect(part.body == Array(whole.body[10...19]))

            let rest = try await get(server, token: token, [("Range", "bytes=100-"), ("If-Range", etag)])
            #expect(rest.status == 206)
            #expect(rest.body == Array(whole.body[100...]))

            let suffix = try await get(server, token: token, [("Range", "bytes=-7")])
            #expect(suffix.body == Array(whole.body.suffix(7)))

            let past = try await get(server, token: token, [("Range", "bytes=\(length)-")])
            #expect(past.status == 416)
            #expect(past.header("Content-Range") == "bytes */\(length)")

            // A part is bytes of the gzip file, never labelled Content-Encoding: gzip (a part from
            // the middle of the stream cannot be decoded), and neither is the error of a range
            // past the end (its body is plain JSON). Found by the contract run (schemathesis).
            let gzipPart = try await get(server, token: token, [("Range", "bytes=10-19"), ("Accept-Encoding", "gzip")])
            #expect(gzipPart.status == 206)
            #expect(gzipPart.header("Content-Encoding") == nil)
            #expect(gzipPart.header("Content-Type") == "application/gzip")
            #expect(gzipPart.body == Array(whole.body[10...19]))
            let gzipPast = try await get(server, token: token, [("Range", "bytes=\(length)-"), ("Accept-Encoding", "gzip")])
            #expect(gzipPast.status == 416)
            #expect(gzipPast.header("Content-Encoding") == nil)
            #expect(gzipPast.header("Content-Type") == "application/json")
            #expect(String(decoding: gzipPast.body, as: UTF8.self).contains("range_not_satisfiable"))

            // A range of another snapshot's bytes would be garbage: the whole current one instead.
            let stale = try await get(server, token: token, [("Range", "bytes=100-"), ("If-Range", "\"1-old\"")])
            #expect(stale.status == 200)
            #expect(stale.body == whole.body)
            // Several ranges are not served piecemeal: the whole file.
            #expect(try await get(server, token: token, [("Range", "bytes=0-1,5-6")]).status == 200)
        }
    }

    @Test(arguments: StoreKind.all)
    func anInterruptedDownloadResumesWhereItStopped(store: StoreKind) async throws {
        try await withSnapshotServer(store: store) { server, directory, author in
            for round in 0..<3 { try await Setup.work(author, "more\(round)") }
            let connection = LocalStore.ServerConnection(url: server.url, token: try await token(server, "newcomer"))
            let path = directory.file("newcomer.sqlite")

            // The connection breaks after 3,000 bytes of the body.
            let cut = CuttingTransport(after: 3_000)
            await #expect(throws: SyncFailure.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: cut)
            }
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(try fileSize(path + ".snapshot.gz") == 3_000)

            try await Setup.work(author, "after")
            let recording = RecordingTransport()
            let (store, report) = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: recording)
            let downloaded = try #require(report)
            #expect(downloaded.resumedAt == 3_000)
            #expect(downloaded.receivedBytes == downloaded.gzipBytes - 3_000)
            #expect(recording.headers.last?["Range"] == "bytes=3000-")
            #expect(recording.headers.last?["If-Range"] != nil)
            #expect(!FileManager.default.fileExists(atPath: path + ".snapshot.gz"))

            #expect(try await store.status().maxRevision == 4)
            let sync = try await Synchronizer(store: store).sync()
            #expect(!sync.snapshot)
            #expect(try await store.contents() == server.contents())
            try store.close()
        }
    }

    @Test func aDownloadWhoseSnapshotChangedStartsOver() async throws {
        try await withSnapshotServer(interval: 1) { server, directory, author in
            let connection = LocalStore.ServerConnection(url: server.url, token: try await token(server, "newcomer"))
            let path = directory.file("newcomer.sqlite")
            await #expect(throws: SyncFailure.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: CuttingTransport(after: 2_000))
            }
            // The data set moves on, and the server makes a new snapshot.
            try await Setup.work(author, "b")
            let (store, report) = try await LocalStore.bootstrap(at: path, downloadingFrom: connection)
            #expect(report?.resumedAt == 0)
            #expect(try await store.status().maxRevision == 2)
            #expect(try await store.contents() == server.contents())
            try store.close()
        }
    }

    @Test func aDamagedDownloadIsNeverOpenedAndTheNextAttemptStartsOver() async throws {
        try await withSnapshotServer { server, directory, _ in
            let connection = LocalStore.ServerConnection(url: server.url, token: try await token(server, "newcomer"))
            let path = directory.file("newcomer.sqlite")
            await #expect(throws: SyncFailure.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: CuttingTransport(after: 2_000))
            }
            // A byte of what arrived is flipped on disk.
            let partial = path + ".snapshot.gz"
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: partial)))
            bytes[1_500] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: partial))

            let error = await #expect(throws: LocalStoreError.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection)
            }
            #expect(error?.code == .corrupt)
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(!FileManager.default.fileExists(atPath: partial))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("newcomer") }
            #expect(leftovers.isEmpty)

            let (store, report) = try await LocalStore.bootstrap(at: path, downloadingFrom: connection)
            #expect(report?.resumedAt == 0)
            #expect(try await store.contents() == server.contents())
            try store.close()
        }
    }

    @Test func refusalsLeaveNothingBehind() async throws {
        try await withSnapshotServer { server, directory, author in
            let path = directory.file("newcomer.sqlite")
            let revoked = LocalStore.ServerConnection(url: server.url, token: "no-such-token")
            let error = await #expect(throws: SyncFailure.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: revoked)
            }
            guard error?.status == 401 else {
                Issue.record("expected 401, got \(String(describing: error))")
                return
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("newcomer") }.isEmpty)

            // A store with pending change sets is never replaced, and nothing is downloaded.
            let connection = LocalStore.ServerConnection(url: server.url, token: try await token(server, "busy"))
            let busy = try LocalStore.create(at: path, schema: .demo, server: connection)
            try await busy.table("venues").insert(["name": "Unsent"])
            try busy.close()
            let recording = RecordingTransport()
            let pending = await #expect(throws: LocalStoreError.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: recording, replacing: true)
            }
            #expect(pending?.code == .pendingChanges)
            #expect(recording.headers.isEmpty)
            // Without `replacing`, the existing store is opened as it is.
            let (existing, report) = try await LocalStore.bootstrap(at: path, downloadingFrom: connection)
            #expect(report == nil)
            #expect(try await existing.table("venues").all().count == 1)
            try existing.close()
            _ = author
        }
    }

    @Test func revsyncInitDownloadsTheSnapshotThenSyncs() async throws {
        try await withSnapshotServer { server, directory, author in
            try await Setup.work(author, "later")
            let token = try await token(server, "terminal")
            let store = directory.file("terminal.sqlite")
            let created = try await ExecutableProcess.run(
                "revsync",
                ["init", "--store", store, "--server", server.url.absoluteString, "--token", token, "--download-snapshot", "--json"])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("\"maxRevision\":2"))
            #expect(created.stdout.contains("\"resumedAt\":0"))
            try await author.table("venues").insert(["name": "After"])
            try await author.sync()
            let synced = try await ExecutableProcess.run("revsync", ["sync", "--store", store, "--json"])
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(synced.stdout.contains("\"snapshot\":false"))
            let opened = try LocalStore.open(at: store)
            #expect(try await opened.contents() == server.contents())
            try opened.close()

            let again = try await ExecutableProcess.run(
                "revsync", ["init", "--store", store, "--server", server.url.absoluteString, "--token", token, "--download-snapshot"])
            #expect(again.status != 0)
            #expect(again.stderr.contains("already exists"))
        }
    }

    func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}

/// The real socket transport, with a connection that breaks after `after` bytes of a
/// download's body have arrived (what poor Wi-Fi does).
struct CuttingTransport: SyncTransport {
    let after: Int
    private let inner = SocketTransport()

    func send(_ request: TransportRequest) async throws -> TransportResponse { try await inner.send(request) }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let counter = Counter()
        let after = self.after
        return try await inner.download(request) { head, bytes in
            let already = counter.add(bytes.count)
            let keep = max(0, min(bytes.count, after - already))
            if keep > 0 { try receive(head, Array(bytes.prefix(keep))) }
            if already + bytes.count >= after { throw TransportError("the connection broke (test)") }
        }
    }

    final class Counter: Sendable {
        private let total = Locked(0)
        /// Adds `count`; returns the total before.
        func add(_ count: Int) -> Int {
            total.withLock { total in
                defer { total += count }
                return total
            }
        }
    }
}

/// The real socket transport, remembering the headers of every download it started.
final class RecordingTransport: SyncTransport, Sendable {
    private let inner = SocketTransport()
    private let recorded = Locked<[[String: String]]>([])
    var headers: [[String: String]] { recorded.current }

    func send(_ request: TransportRequest) async throws -> TransportResponse { try await inner.send(request) }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        recorded.withLock { $0.append(request.headers) }
        return try await inner.download(request, receive: receive)
    }
}
