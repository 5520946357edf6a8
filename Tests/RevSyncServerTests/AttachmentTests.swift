import Crypto
import Foundation
import Logging
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `PUT`, `HEAD` and `GET /attachments/{sha256}`, and change sets that name attachments: on both
/// stores, over real HTTP.
@Suite struct AttachmentTests {
    static func digest(_ bytes: [UInt8]) -> String { Hex.encode(SHA256.hash(data: bytes)) }

    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    /// A device's token header.
    static func auth(_ device: TestDevice) -> (String, String) { ("Authorization", "Bearer \(device.token)") }

    @Test(arguments: StoreKind.all)
    func aWholeUploadIsVerifiedServedWithRangesAndCachedForever(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let photo = Self.bytes(3_000_000)
            let sha = Self.digest(photo)
            let put = try await server.send("PUT", "/attachments/\(sha)", headers: [Self.auth(device)], body: photo)
            #expect(put.status == 201 && put.header("RevSync-Received") == "3000000")
            let head = try await server.send("HEAD", "/attachments/\(sha)", headers: [Self.auth(device)])
            #expect(head.status == 200 && head.header("Content-Length") == "3000000")
            // The uploader may read it back before any record refers to it.
            let whole = try await server.send("GET", "/attachments/\(sha)", headers: [Self.auth(device)])
            #expect(whole.status == 200 && whole.body == photo)
            #expect(whole.header("ETag") == "\"\(sha)\"")
            #expect(whole.header("Cache-Control") == "private, max-age=31536000, immutable")
            let part = try await server.send(
                "GET", "/attachments/\(sha)", headers: [Self.auth(device), ("Range", "bytes=1048570-1048580")])
            #expect(part.status == 206 && part.body == Array(photo[1_048_570...1_048_580]))
            #expect(part.header("Content-Range") == "bytes 1048570-1048580/3000000")
            // The same bytes again: already here.
            let again = try await server.send("PUT", "/attachments/\(sha)", headers: [Self.auth(device)], body: photo)
            #expect(again.status == 201)
        }
    }

    @Test(arguments: StoreKind.all)
    func partsResumeWhereTheServerIsAndAWrongStartIsAConflict(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let photo = Self.bytes(2_500_000, seed: 3)
            let sha = Self.digest(photo)
            func put(_ range: ClosedRange<Int>) async throws -> RawHTTPResponse {
                try await server.send(
                    "PUT", "/attachments/\(sha)",
                    headers: [Self.auth(device), ("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(photo.count)")],
                    body: Array(photo[range]))
            }
            let first = try await put(0...999_999)
            #expect(first.status == 202 && first.header("RevSync-Received") == "1000000")
            let none = try await server.send("HEAD", "/attachments/\(sha)", headers: [Self.auth(device)])
            #expect(none.status == 404 && none.header("RevSync-Received") == "1000000")
            let skipped = try await put(1_500_000...2_499_999)
            #expect(skipped.status == 409 && skipped.header("RevSync-Received") == "1000000")
            let repeated = try await put(0...999_999)
            #expect(repeated.status == 409 && repeated.header("RevSync-Received") == "1000000")
            // Not readable until complete.
            #expect(try await server.send("GET", "/attachments/\(sha)", headers: [Self.auth(device)]).status == 404)
            let rest = try await put(1_000_000...2_499_999)
            #expect(rest.status == 201)
            #expect(try await server.send("GET", "/attachments/\(sha)", headers: [Self.auth(device)]).body == photo)
        }
    }

    @Test(arguments: StoreKind.all)
    func twoDevicesUploadingTheSameBytesAtOnceBothEndWithThem(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let ipad = try await server.device("ipad")
            let laptop = try await server.device("laptop")
            let photo = Self.bytes(4_000_000, seed: 11)
            let sha = Self.digest(photo)
            let (port, ipadToken, laptopToken) = (server.port, ipad.token, laptop.token)
            let first = Task { try await Self.upload(photo, token: ipadToken, port: port) }
            let second = Task { try await Self.upload(photo, token: laptopToken, port: port) }
            let (a, b) = (try await first.value, try await second.value)
            #expect(a.last == 201 && b.last == 201, "\(a) \(b)")
            #expect((a + b).allSatisfy { [201, 202, 409].contains($0) }, "\(a) \(b)")
            // Each may read what it uploaded; the bytes are the photo's, once.
            for device in [ipad, laptop] {
                #expect(try await server.send("GET", "/attachments/\(sha)", headers: [Self.auth(device)]).body == photo)
            }
        }
    }

    /// As a device uploads: from where the server is, again after a 409, until 201; the statuses.
    static func upload(_ photo: [UInt8], token: String, port: Int) async throws -> [Int] {
        let authorization = ("Authorization", "Bearer \(token)")
        let sha = digest(photo)
        var statuses: [Int] = []
        for _ in 0..<200 {
            let head = try await RawHTTPClient.send(port: port, method: "HEAD", path: "/attachments/\(sha)", headers: [authorization])
            let start = head.status == 200 ? 0 : Int(head.header("RevSync-Received") ?? "0") ?? 0
            if start >= photo.count {
                // All there, being verified: ask again.
                try await Task.sleep(for: .milliseconds(10))
                continue
            }
            let put = try await RawHTTPClient.send(
                port: port, method: "PUT", path: "/attachments/\(sha)",
                headers: [authorization, ("Content-Range", "bytes \(start)-\(photo.count - 1)/\(photo.count)")],
                body: Array(photo[start...]))
            statuses.append(put.status)
            if put.status == 201 { return statuses }
            try await Task.sleep(for: .milliseconds(10))
        }
        return statuses
    }

    @Test(arguments: StoreKind.all)
    func bytesThatDoNotMatchTheirDigestAreDiscarded(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let photo = Self.bytes(10_000)
            let forged = Self.digest(Self.bytes(10_000, seed: 9))
            let put = try await server.send("PUT", "/attachments/\(forged)", headers: [Self.auth(device)], body: photo)
            #expect(put.status == 400 && String(decoding: put.body, as: UTF8.self).contains("digest_mismatch"))
            let head = try await server.send("HEAD", "/attachments/\(forged)", headers: [Self.auth(device)])
            #expect(head.status == 404 && head.header("RevSync-Received") == "0")
        }
    }

    @Test(arguments: StoreKind.all)
    func limitsTokensAndNamesAreChecked(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments, configure: { $0.attachments.maxBytes = 1000 }) { server in
            let device = try await server.device("ipad")
            let viewer = try await server.device("wall", role: .viewer)
            let small = Self.bytes(100)
            let sha = Self.digest(small)
            let big = Self.bytes(1001)
            #expect(try await server.send("PUT", "/attachments/\(Self.digest(big))", headers: [Self.auth(device)], body: big).status == 413)
            let bigRange = try await server.send(
                "PUT", "/attachments/\(sha)", headers: [Self.auth(device), ("Content-Range", "bytes 0-99/5000")], body: small)
            #expect(bigRange.status == 413)
            #expect(try await server.send("PUT", "/attachments/\(sha)", body: small).status == 401)
            #expect(try await server.send("PUT", "/attachments/\(sha)", headers: [Self.auth(viewer)], body: small).status == 403)
            #expect(try await server.send("PUT", "/attachments/NOT-A-DIGEST", headers: [Self.auth(device)], body: small).status == 400)
            #expect(
                try await server.send("PUT", "/attachments/\(sha.uppercased())", headers: [Self.auth(device)], body: small).status == 400)
            let badRange = try await server.send(
                "PUT", "/attachments/\(sha)", headers: [Self.auth(device), ("Content-Range", "bytes 50-10/100")], body: small)
            #expect(badRange.status == 400)
            // Nothing of the refused requests was kept.
            #expect(try await server.send("HEAD", "/attachments/\(sha)", headers: [Self.auth(device)]).header("RevSync-Received") == "0")
        }
    }

    @Test(arguments: StoreKind.all)
    func aBodyCutOffKeepsWhatArrivedForTheDeviceToResume(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let photo = Self.bytes(3_000_000, seed: 5)
            let sha = Self.digest(photo)
            // Half the body, then the connection is gone.
            let head =
                "PUT /attachments/\(sha) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(device.token)\r\nContent-Length: \(photo.count)\r\n\r\n"
            try {
                let connection = try RawHTTPConnection(port: server.port)
                try connection.send(Array(head.utf8) + Array(photo[0..<1_500_000]))
            }()  // closed as it goes out of scope
            // As a device resumes: where is the server? Send the rest from there (a 409 while the
            // broken request is still being wound up says where it got to).
            var firstResume = -1
            var status = 0
            for _ in 0..<100 {
                let state = try await server.send("HEAD", "/attachments/\(sha)", headers: [Self.auth(device)])
                let received = Int(state.header("RevSync-Received") ?? "0") ?? 0
                if received == 0 {
                    try await Task.sleep(for: .milliseconds(50))
                    continue
                }
                if firstResume < 0 { firstResume = received }
                let rest = try await server.send(
                    "PUT", "/attachments/\(sha)",
                    headers: [Self.auth(device), ("Content-Range", "bytes \(received)-\(photo.count - 1)/\(photo.count)")],
                    body: Array(photo[received...]))
                status = rest.status
                if status == 201 { break }
                #expect(status == 409)
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(firstResume > 0 && firstResume <= 1_500_000)
            #expect(status == 201)
            #expect(try await server.send("GET", "/attachments/\(sha)", headers: [Self.auth(device)]).body == photo)
        }
    }

    @Test(arguments: StoreKind.all)
    func aChangeSetNamingBytesTheServerLacksIsRefusedAndOneThatHasThemCommits(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let ipad = try await server.device("ipad")
            let laptop = try await server.device("laptop")
            let photo = Self.bytes(20_000)
            let value = try Attachment(sha256: Self.digest(photo), size: Int64(photo.count), type: "image/jpeg", name: "knee.jpg")
            let player = ipad.temporaryID()
            let early = ChangeSet.new().creating(
                "players", player, ["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
            let before = try await server.revision()
            let refused = try #require(try await ipad.sync([early]).outcome(of: early.id))
            #expect(refused.reason == .missingAttachment)
            #expect(refused.conflicts.map(\.attribute) == ["photo"])
            #expect(refused.conflicts.first?.message?.contains(value.sha256) == true)
            #expect(try await server.revision() == before)
            // Not the uploader, no record: the laptop may not read it.
            #expect(try await server.send("PUT", "/attachments/\(value.sha256)", headers: [Self.auth(ipad)], body: photo).status == 201)
            #expect(try await server.send("GET", "/attachments/\(value.sha256)", headers: [Self.auth(laptop)]).status == 404)
            // A size that is not the bytes' is invalid.
            let lying = try Attachment(sha256: value.sha256, size: 5, type: "image/jpeg")
            let wrong = ChangeSet.new().creating(
                "players", ipad.temporaryID(), ["first_name": "B", "last_name": "C", "photo": .attachment(lying)])
            #expect(try await ipad.sync([wrong]).outcome(of: wrong.id)?.reason == .invalid)

            let later = ChangeSet.new().creating(
                "players", ipad.temporaryID(), ["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
            let committed = try #require(try await ipad.sync([later]).outcome(of: later.id))
            #expect(committed.conflict == false)
            // Now a record refers to it: every device may read it, and sees the value.
            #expect(try await server.send("GET", "/attachments/\(value.sha256)", headers: [Self.auth(laptop)]).body == photo)
            let seen = try await laptop.sync()
            let values = seen.changeSets.compactMap { $0.changes(for: "players")?.attributes.values.first?.values["photo"] }
            #expect(values == [.attachment(value)])
        }
    }

    @Test(arguments: StoreKind.all)
    func retentionDeletesWhatNothingRefersToAndAbandonedUploads(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let (orphan, used, half) = (Self.bytes(3000, seed: 1), Self.bytes(3000, seed: 2), Self.bytes(3000, seed: 3))
            for bytes in [orphan, used] {
                #expect(
                    try await server.send("PUT", "/attachments/\(Self.digest(bytes))", headers: [Self.auth(device)], body: bytes).status
                        == 201)
            }
            let partial = try await server.send(
                "PUT", "/attachments/\(Self.digest(half))", headers: [Self.auth(device), ("Content-Range", "bytes 0-999/3000")],
                body: Array(half[..<1000]))
            #expect(partial.status == 202)
            let value = try Attachment(sha256: Self.digest(used), size: 3000, type: "image/png")
            let player = device.temporaryID()
            let create = ChangeSet.new().creating("players", player, ["first_name": "A", "last_name": "B", "photo": .attachment(value)])
            let created = try await device.sync([create])
            #expect(created.outcome(of: create.id)?.conflict == false)
            // The record no longer names it, but its history does (a revert would need it).
            let id = try #require(created.permanentID(of: player, in: "players"))
            let clear = ChangeSet.new().updating("players", id, base: try await server.revision(), ["photo": .null])
            #expect(try await device.sync([clear]).outcome(of: clear.id)?.conflict == false)

            let retention = AttachmentRetention(
                store: try #require(server.http).attachments, schema: .attachments, days: 30, logger: .init(label: "test"))
            // Within the retention and the day an upload is kept: nothing goes.
            #expect(try await retention.prune() == AttachmentRetention.Pruned())
            let later = try await retention.prune(now: Date().addingTimeInterval(31 * 86_400))
            #expect(later == AttachmentRetention.Pruned(attachments: 1, uploads: 1))
            func received(_ bytes: [UInt8]) async throws -> (Int, String?) {
                let head = try await server.send("HEAD", "/attachments/\(Self.digest(bytes))", headers: [Self.auth(device)])
                return (head.status, head.header("RevSync-Received"))
            }
            #expect(try await received(orphan) == (404, "0"))
            #expect(try await received(used).0 == 200)
            #expect(try await received(half) == (404, "0"))
        }
    }

    @Test(arguments: StoreKind.all)
    func theConsolesHistoryShowsImagesAsThumbnails(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let admin = try await server.device("admin", role: .admin)
            let device = try await server.device("ipad")
            let photo = Self.bytes(2000)
            let value = try Attachment(sha256: Self.digest(photo), size: 2000, type: "image/png", name: "knee.png")
            #expect(try await server.send("PUT", "/attachments/\(value.sha256)", headers: [Self.auth(device)], body: photo).status == 201)
            let player = device.temporaryID()
            let create = ChangeSet.new().creating("players", player, ["first_name": "A", "last_name": "B", "photo": .attachment(value)])
            let id = try #require(try await device.sync([create]).permanentID(of: player, in: "players"))

            var browser = ConsoleSessionTests.Browser(server: server)
            #expect(try await browser.get("/admin/attachments/\(value.sha256)?type=image/png").status == 303)  // signed in only
            _ = try await browser.signIn(admin.token)
            let history = try await browser.get("/admin/history?entity=players&id=\(id.rawValue)")
            let image = "/admin/attachments/\(value.sha256)?type=image%2Fpng"
            #expect(history.bodyText.contains("<img src=\"\(image)\" alt=\"photo: knee.png\""), "\(history.bodyText.prefix(3000))")
            let served = try await browser.get(image)
            #expect(served.status == 200 && served.body == photo && served.header("Content-Type") == "image/png")
            #expect(served.header("X-Content-Type-Options") == "nosniff")
            // Never as a type that may carry script, nor what is not there.
            #expect(try await browser.get("/admin/attachments/\(value.sha256)?type=image/svg%2Bxml").status == 404)
            #expect(try await browser.get("/admin/attachments/\(Self.digest([1]))?type=image/png").status == 404)
        }
    }

    /// An attachment value in a record's history reads back through the admin API's shared
    /// types as an attachment (not text), and `revsync-server history` names the file.
    @Test(arguments: StoreKind.all)
    func theAdminAPIsHistoryTypesReadAnAttachmentValue(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let admin = try await server.device("admin", role: .admin)
            let device = try await server.device("ipad")
            let photo = Self.bytes(1500)
            let value = try Attachment(sha256: Self.digest(photo), size: 1500, type: "image/png", name: "knee.png")
            #expect(try await server.send("PUT", "/attachments/\(value.sha256)", headers: [Self.auth(device)], body: photo).status == 201)
            let player = device.temporaryID()
            let create = ChangeSet.new().creating("players", player, ["first_name": "A", "last_name": "B", "photo": .attachment(value)])
            let id = try #require(try await device.sync([create]).permanentID(of: player, in: "players"))

            let response = try await server.send(
                "GET", "/admin/api/history?entity=players&id=\(id.rawValue)", headers: [("Authorization", "Bearer \(admin.token)")])
            #expect(response.status == 200)
            let page = try AdminAPI.decoder().decode(AdminAPI.RecordHistoryPage.self, from: Data(response.body))
            #expect(page.changes.count == 1)
            #expect(page.changes.first?.after?["photo"] == .value(.attachment(value)))
            #expect(page.changes.first?.after?["first_name"] == .value(.text("A")))

            let command = try await ExecutableProcess.run(
                "revsync-server",
                [
                    "history", "--server", "http://127.0.0.1:\(server.port)", "--token", admin.token, "--entity", "players", "--id",
                    String(id.rawValue),
                ])
            #expect(command.status == 0, "\(command.stderr)")
            #expect(command.stdout.contains("photo=knee.png (image/png, 1500 bytes)"), "\(command.stdout)")
        }
    }

    @Test func onSQLiteTheBytesArePrivateFilesBesideTheDatabase() async throws {
        try await withLiveServer(store: .sqlite, schema: .attachments) { server in
            let device = try await server.device("ipad")
            let photo = Self.bytes(5_000)
            let sha = Self.digest(photo)
            let half = try await server.send(
                "PUT", "/attachments/\(sha)", headers: [Self.auth(device), ("Content-Range", "bytes 0-2499/5000")],
                body: Array(photo[..<2500]))
            #expect(half.status == 202)
            let directory = server.database + "-attachments"
            func mode(_ path: String) throws -> Int {
                try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            }
            #expect(try mode(directory) == 0o700 && mode(directory + "/partial") == 0o700)
            // The upload is the device's own: its file is named for the device.
            #expect(try mode(directory + "/partial/\(device.device.id)-\(sha)") == 0o600)
            let rest = try await server.send(
                "PUT", "/attachments/\(sha)", headers: [Self.auth(device), ("Content-Range", "bytes 2500-4999/5000")],
                body: Array(photo[2500...]))
            #expect(rest.status == 201)
            #expect(try mode(directory + "/objects/\(sha)") == 0o600)
            #expect(!FileManager.default.fileExists(atPath: directory + "/partial/\(device.device.id)-\(sha)"))
            #expect(FileManager.default.contents(atPath: directory + "/objects/\(sha)") == Data(photo))
        }
    }

    @Test func attachmentValuesReadAndRefuseWhatIsNotOne() throws {
        let sha = String(repeating: "ab", count: 32)
        let value = try Value(json: #"{"sha256":"\#(sha)","size":12,"type":"image/png","name":"a.png"}"#)
        #expect(value == .attachment(try Attachment(sha256: sha, size: 12, type: "image/png", name: "a.png")))
        #expect(value.description == #"{"sha256":"\#(sha)","size":12,"type":"image/png","name":"a.png"}"#)
        for bad in [
            #"{"sha256":"\#(sha.uppercased())","size":12,"type":"image/png"}"#, #"{"sha256":"abc","size":12,"type":"image/png"}"#,
            #"{"sha256":"\#(sha)","size":-1,"type":"image/png"}"#, #"{"sha256":"\#(sha)","size":12,"type":"png"}"#,
            #"{"sha256":"\#(sha)","size":12}"#, #"{"sha256":"\#(sha)","size":12,"type":"image/png","path":"/etc"}"#,
            #"{"sha256":"\#(sha)","size":12,"type":"image/png","name":"../x"}"#, "[1]",
        ] {
            #expect(throws: ProtocolError.self, "\(bad)") { try Value(json: bad) }
        }
        // In a change set, with the path of the value in the error.
        let json =
            #"{"maxRevision":0,"changeSets":[{"id":"a","players":{"create":[-1],"attributes":{"-1":{"photo":{"sha256":"x","size":1,"type":"a/b"}}}}}]}"#
        #expect(throws: ProtocolError.self) { try SyncMessage(json: json, sender: .client) }
    }
}
