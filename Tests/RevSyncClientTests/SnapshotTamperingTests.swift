import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A snapshot whose bytes were changed on the way (a cache or a proxy serving other bytes under
/// the digest the server announced): a valid gzip of a store that passes SQLite's integrity
/// check, one record's text changed. It is never installed: `bootstrap` refuses it as
/// `corrupt`, and a first sync falls back to the JSON full sync.
@Suite struct SnapshotTamperingTests {
    typealias Download = SnapshotDownloadTests

    @Test(arguments: StoreKind.all)
    func aTamperedSnapshotIsRefusedByBootstrap(store: StoreKind) async throws {
        try await Download().withSnapshotServer(store: store) { server, directory, _ in
            let connection = LocalStore.ServerConnection(url: server.url, token: try await Download().token(server, "newcomer"))
            let path = directory.file("newcomer.sqlite")
            let tampering = TamperingTransport(replacing: "Team a", with: "Team z")
            let error = await #expect(throws: LocalStoreError.self) {
                _ = try await LocalStore.bootstrap(at: path, downloadingFrom: connection, transport: tampering)
            }
            #expect(tampering.tampered, "the test changed no byte of the snapshot")
            #expect(error?.code == .corrupt)
            #expect(!FileManager.default.fileExists(atPath: path))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("newcomer") }
            #expect(leftovers.isEmpty, "\(leftovers)")

            // The next attempt, through an honest path, starts over and holds the server's records.
            let (started, report) = try await LocalStore.bootstrap(at: path, downloadingFrom: connection)
            #expect(report?.resumedAt == 0)
            #expect(try await started.contents() == server.contents())
            try started.close()
        }
    }

    @Test(arguments: StoreKind.all)
    func aTamperedSnapshotMakesTheFirstSyncAFullSync(store: StoreKind) async throws {
        try await Download().withSnapshotServer(store: store) { server, directory, _ in
            let tampering = TamperingTransport(replacing: "Team a", with: "Team z")
            let newcomer = try await server.clientDevice("newcomer", in: directory, transport: tampering)
            try await newcomer.table("venues").insert(["name": "Offline pitch"])
            let report = try await newcomer.sync()
            #expect(tampering.tampered, "the test changed no byte of the snapshot")
            #expect(report.startedFromSnapshot == nil)
            #expect(report.snapshot, "the JSON full sync")
            #expect(report.committed.count == 1)
            #expect(report.verified == true)
            #expect(try await newcomer.store.contents() == server.contents())
            let names = try await newcomer.table("teams").all().map { $0["name"] }
            #expect(names == [.text("Team a")])
            #expect(!FileManager.default.fileExists(atPath: newcomer.store.path + ".snapshot.gz"))
        }
    }
}

/// The real socket transport, serving `GET /snapshot` with other bytes: the snapshot it
/// downloads is decompressed, `original` replaced by `replacement` (same length) in the store
/// file, and compressed again; the headers (the announced digest) are the server's, with the
/// new length.
final class TamperingTransport: SyncTransport, Sendable {
    private let inner = SocketTransport()
    private let original: [UInt8]
    private let replacement: [UInt8]
    private let changed = Locked(false)
    /// Whether a download was changed.
    var tampered: Bool { changed.current }

    init(replacing original: String, with replacement: String) {
        precondition(original.utf8.count == replacement.utf8.count)
        self.original = Array(original.utf8)
        self.replacement = Array(replacement.utf8)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse { try await inner.send(request) }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let body = Locked<[UInt8]>([])
        let head = Locked<TransportResponse?>(nil)
        let response = try await inner.download(request) { response, bytes in
            head.withLock { $0 = $0 ?? response }
            body.withLock { $0 += bytes }
        }
        guard response.status == 200, var first = head.current else {
            if let first = head.current { try receive(first, body.current) }
            return response
        }
        var store = try Gzip.decompress(body.current, limit: 1 << 30)
        if let at = Self.range(of: original, in: store) {
            store.replaceSubrange(at..<(at + original.count), with: replacement)
            changed.withLock { $0 = true }
        }
        let tamperedBody = Gzip.compress(store)
        first.headers["content-length"] = String(tamperedBody.count)
        try receive(first, tamperedBody)
        return response
    }

    private static func range(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start }
        }
        return nil
    }
}
