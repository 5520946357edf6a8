import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Each token's uploads are its own: the server tells a token about a digest only when it may
/// read it (a committed record refers to it) or it uploaded it; one token's bytes never mix
/// with another's upload of the same digest; what a token (and all of them) may leave on the
/// server unreferenced is bounded; a body longer than its range is refused.
@Suite struct AttachmentIsolationTests {
    typealias Helpers = AttachmentTests

    static func put(
        _ server: LiveServer, _ device: TestDevice, _ bytes: [UInt8], sha: String? = nil, range: ClosedRange<Int>? = nil, total: Int? = nil
    ) async throws -> RawHTTPResponse {
        let sha = sha ?? Helpers.digest(bytes)
        guard let range else {
            return try await server.send(
                "PUT", "/attachments/\(sha)", headers: [Helpers.auth(device)] + (bytes.isEmpty ? [("Content-Length", "0")] : []),
                body: bytes)
        }
        return try await server.send(
            "PUT", "/attachments/\(sha)",
            headers: [Helpers.auth(device), ("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(total ?? bytes.count)")],
            body: Array(bytes[range]))
    }

    static func head(_ server: LiveServer, _ device: TestDevice, _ sha: String) async throws -> RawHTTPResponse {
        try await server.send("HEAD", "/attachments/\(sha)", headers: [Helpers.auth(device)])
    }

    static func get(_ server: LiveServer, _ device: TestDevice, _ sha: String) async throws -> RawHTTPResponse {
        try await server.send("GET", "/attachments/\(sha)", headers: [Helpers.auth(device)])
    }

    static func photo(_ bytes: [UInt8]) throws -> Value {
        .attachment(try Attachment(sha256: Helpers.digest(bytes), size: Int64(bytes.count), type: "image/jpeg"))
    }

    @Test(arguments: StoreKind.all)
    func aTokenLearnsOfADigestOnlyWhenItMayReadItOrUploadedIt(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let mallory = try await server.device("mallory")
            let portrait = Helpers.bytes(300_000, seed: 11)
            let sha = Helpers.digest(portrait)
            #expect(try await Self.put(server, alice, portrait).status == 201)
            #expect(try await Self.head(server, alice, sha).status == 200)
            // Uploaded, not referenced: another token learns nothing, and gets nothing.
            let head = try await Self.head(server, mallory, sha)
            #expect(head.status == 404 && head.header("RevSync-Received") == "0")
            #expect(try await Self.get(server, mallory, sha).status == 404)
            // An empty PUT (or any bytes but these) does not make it the token's.
            let empty = try await Self.put(server, mallory, [], sha: sha)
            #expect(empty.status == 400, "\(empty.bodyText)")
            #expect(try await Self.get(server, mallory, sha).status == 404)
            // Naming it in a change set without having sent it is naming bytes the server lacks.
            let player = mallory.temporaryID()
            let stolen = try await mallory.sync([
                ChangeSet.new().creating("players", player, ["first_name": "M", "last_name": "X", "photo": try Self.photo(portrait)])
            ])
            #expect(stolen.changeSets.first?.reason == .missingAttachment)
            // Another token's upload in progress is not told either: not how far, not where to resume.
            let scan = Helpers.bytes(200_000, seed: 12)
            #expect(try await Self.put(server, alice, scan, range: 0...99_999).status == 202)
            let partial = try await Self.head(server, mallory, Helpers.digest(scan))
            #expect(partial.status == 404 && partial.header("RevSync-Received") == "0")
            let resume = try await Self.put(server, mallory, scan, range: 100_000...199_999)
            #expect(resume.status == 409 && resume.header("RevSync-Received") == "0")

            // Once a committed record refers to it, every token may read it.
            let mine = alice.temporaryID()
            let created = try await alice.sync([
                ChangeSet.new().creating("players", mine, ["first_name": "A", "last_name": "Y", "photo": try Self.photo(portrait)])
            ])
            #expect(created.changeSets.first?.conflict == false)
            #expect(try await Self.head(server, mallory, sha).status == 200)
            #expect(try await Self.get(server, mallory, sha).body == portrait)
            #expect(try await Self.put(server, mallory, [], sha: sha).status == 201)
            // And a token that sends the bytes itself may name them before that.
            let other = Helpers.bytes(50_000, seed: 13)
            #expect(try await Self.put(server, alice, other).status == 201)
            #expect(try await Self.put(server, mallory, other).status == 201)
            let named = try await mallory.sync([
                ChangeSet.new().creating(
                    "players", mallory.temporaryID(), ["first_name": "M", "last_name": "Z", "photo": try Self.photo(other)])
            ])
            #expect(named.changeSets.first?.conflict == false)
        }
    }

    /// Mallory knows the digest of Alice's photo and sends garbage under it first: Alice's
    /// upload is her own, completes, and her change set commits; Mallory's is refused alone.
    @Test(arguments: StoreKind.all)
    func uploadsOfOneDigestByTwoTokensNeverMix(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let mallory = try await server.device("mallory")
            let portrait = Helpers.bytes(2_400_000, seed: 21)
            let sha = Helpers.digest(portrait)
            let garbage = Helpers.bytes(portrait.count, seed: 99)
            #expect(try await Self.put(server, mallory, garbage, sha: sha, range: 0...1_199_999).status == 202)
            // Alice starts from 0 (her own upload), in parts, and is never sent to Mallory's end.
            let first = try await Self.put(server, alice, portrait, range: 0...1_199_999)
            #expect(first.status == 202 && first.header("RevSync-Received") == "1200000")
            #expect(try await Self.put(server, alice, portrait, range: 1_200_000...2_399_999).status == 201)
            // Mallory's garbage, finished, is hers alone: refused and discarded.
            let poisoned = try await Self.put(server, mallory, garbage, sha: sha, range: 1_200_000...2_399_999)
            #expect(poisoned.status == 400 && poisoned.bodyText.contains("digest_mismatch"), "\(poisoned.bodyText)")
            let mine = alice.temporaryID()
            let created = try await alice.sync([
                ChangeSet.new().creating("players", mine, ["first_name": "A", "last_name": "Y", "photo": try Self.photo(portrait)])
            ])
            #expect(created.changeSets.first?.conflict == false)
            #expect(try await Self.get(server, alice, sha).body == portrait)
            #expect(try await Self.get(server, mallory, sha).body == portrait)
        }
    }

    @Test(arguments: StoreKind.all)
    func whatATokenAndAllOfThemLeaveUnreferencedIsBounded(store: StoreKind) async throws {
        try await withLiveServer(
            store: store,
            configure: {
                $0.attachments.partialUploadsPerToken = 2
                $0.attachments.unreferencedBytesPerToken = 10_000
                $0.attachments.unreferencedBytes = 25_000
            }
        ) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let carol = try await server.device("carol")
            // Uploads in progress per token.
            let parts = (1...3).map { Helpers.bytes(2_000, seed: UInt8($0)) }
            #expect(try await Self.put(server, alice, parts[0], range: 0...999).status == 202)
            #expect(try await Self.put(server, alice, parts[1], range: 0...999).status == 202)
            let third = try await Self.put(server, alice, parts[2], range: 0...999)
            #expect(third.status == 429 && third.bodyText.contains("too_many_uploads"), "\(third.bodyText)")
            // Finishing one frees its place; resuming one in progress is no new upload.
            #expect(try await Self.put(server, alice, parts[0], range: 1_000...1_999).status == 201)
            #expect(try await Self.put(server, alice, parts[2], range: 0...999).status == 202)
            // Unreferenced bytes per token: 6,000 complete + 5,000 is past 10,000.
            let big = Helpers.bytes(6_000, seed: 40)
            #expect(try await Self.put(server, bob, big).status == 201)
            let more = Helpers.bytes(5_000, seed: 41)
            let quota = try await Self.put(server, bob, more)
            #expect(quota.status == 429 && quota.bodyText.contains("upload_quota"), "\(quota.bodyText)")
            // Once a record refers to them, they count no more.
            let player = bob.temporaryID()
            let used = try await bob.sync([
                ChangeSet.new().creating("players", player, ["first_name": "B", "last_name": "C", "photo": try Self.photo(big)])
            ])
            #expect(used.changeSets.first?.conflict == false)
            #expect(try await Self.put(server, bob, more).status == 201)
            // Everyone's together: alice 4,000, bob 5,000, carol 9,000 = 18,000; dave's 8,000 (within
            // his own 10,000) is past 25,000.
            #expect(try await Self.put(server, carol, Helpers.bytes(9_000, seed: 50)).status == 201)
            let dave = try await server.device("dave")
            let full = try await Self.put(server, dave, Helpers.bytes(8_000, seed: 51), range: 0...999, total: 8_000)
            #expect(full.status == 507 && full.bodyText.contains("insufficient_storage"), "\(full.bodyText)")
        }
    }

    /// A chunked body (no Content-Length) longer than its `Content-Range` is a 400, and what it
    /// carried past the range is not kept.
    @Test(arguments: StoreKind.all)
    func aChunkedBodyLongerThanItsRangeIsRefused(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let scan = Helpers.bytes(1_000, seed: 60)
            let sha = Helpers.digest(scan)
            let body = Array(scan[0..<300])
            var request = Array(
                """
                PUT /attachments/\(sha) HTTP/1.1\r
                Host: 127.0.0.1\r
                Connection: close\r
                Authorization: Bearer \(alice.token)\r
                Content-Range: bytes 0-99/1000\r
                Transfer-Encoding: chunked\r
                \r
                \(String(body.count, radix: 16))\r

                """.utf8)
            request += body + Array("\r\n0\r\n\r\n".utf8)
            let response = try await RawHTTPClient.exchange(port: server.port, bytes: request)
            #expect(response.status == 400 && response.bodyText.contains("invalid_range"), "\(response.bodyText)")
            let received = Int(try await Self.head(server, alice, sha).header("RevSync-Received") ?? "") ?? -1
            #expect((0...100).contains(received))
        }
    }
}
