import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Authentication, compression, size limits and the other endpoints.
@Suite struct TransportTests {
    static let emptySync = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)

    static let badAuthorizations: [[String]] = [[], ["Bearer rs_not-a-real-token"], ["Basic dXNlcjpwYXNz"], ["Bearer"]]

    @Test(arguments: StoreKind.all, badAuthorizations)
    func missingOrWrongTokenIs401(store: StoreKind, authorization: [String]) async throws {
        let headers = authorization.map { ("Authorization", $0) }
        try await withLiveServer(store: store) { server in
            let response = try await server.send(
                "POST", "/sync", headers: headers + [("Content-Type", "application/json")],
                body: SyncMessage(maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": "V"])]).jsonBytes())
            #expect(response.status == 401)
            #expect(response.header("WWW-Authenticate") == "Bearer")
            #expect(response.bodyText.contains(#""code":"unauthorized""#))
            #expect(try await server.count("venues") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func revokedTokenIs401(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            #expect(try await device.post(Self.emptySync).status == 200)
            // Every route a device reads the data set through, accepted a moment before.
            let verify = VerifyRequest(revision: 0).jsonBytes()
            let attachment = "/attachments/" + String(repeating: "a", count: 64)
            func verifyStatus() async throws -> Int {
                try await server.send(
                    "POST", "/verify", headers: [("Authorization", "Bearer \(device.token)"), ("Content-Type", "application/json")],
                    body: verify
                ).status
            }
            func attachmentStatus() async throws -> Int {
                try await server.send("GET", attachment, headers: [("Authorization", "Bearer \(device.token)")]).status
            }
            #expect(try await verifyStatus() == 200)
            #expect(try await attachmentStatus() == 404)
            let id = device.device.id
            let revoked = try await server.storage.withWriter { writer in
                try writer.transaction { try writer.revokeDevice(id: id) }
            }
            #expect(revoked)
            // At once, although the token was accepted a moment ago, with or without change sets.
            #expect(try await device.post(Self.emptySync).status == 401)
            #expect(try await verifyStatus() == 401)
            #expect(try await attachmentStatus() == 401)
            let create = SyncMessage(maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": "Hall"])])
            #expect(try await device.post(create.jsonBytes()).status == 401)
            #expect(try await server.count("venues") == 0)
        }
    }

    /// The scheme in any case, spaces before it, whitespace around the token: the token is the
    /// same. Anything else in the scheme's place, or no token, is `401`.
    @Test func theBearerTokenIsReadWhateverTheSchemesCaseAndTheSpaces() async throws {
        try await withLiveServer(store: .sqlite) { server in
            let device = try await server.device()
            for header in ["bearer \(device.token)", "  BEARER   \(device.token)\t ", "Bearer \t\(device.token)"] {
                let response = try await server.send(
                    "POST", "/sync", headers: [("Authorization", header), ("Content-Type", "application/json")], body: Self.emptySync)
                #expect(response.status == 200, "\(header)")
            }
            for header in ["Bearer\(device.token)", "Bearerx \(device.token)", "Beare \(device.token)", "Bearer ", "\(device.token)"] {
                let response = try await server.send(
                    "POST", "/sync", headers: [("Authorization", header), ("Content-Type", "application/json")], body: Self.emptySync)
                #expect(response.status == 401, "\(header)")
            }
            // The admin API reads its tokens the same way, and the role still comes from the token.
            let admin = try await server.device("admin", role: .admin)
            #expect(
                try await server.send("GET", "/admin/api/devices", headers: [("Authorization", "bearer  \(admin.token) ")]).status == 200)
            #expect(
                try await server.send("GET", "/admin/api/devices", headers: [("Authorization", "bearer \(device.token)")]).status == 403)
            #expect(
                try await server.send("GET", "/admin/api/devices", headers: [("Authorization", "Bearerx \(admin.token)")]).status == 401)
        }
    }

    /// Looks into the SQLite file itself; the SQL that stores tokens is the same for both stores.
    @Test func tokensAreStoredHashed() async throws {
        try await withLiveServer(store: .sqlite) { server in
            let device = try await server.device()
            let raw =
                try Data(contentsOf: URL(fileURLWithPath: server.database))
                + ((try? Data(contentsOf: URL(fileURLWithPath: server.database + "-wal"))) ?? Data())
            #expect(raw.range(of: Data(device.token.utf8)) == nil)
            #expect(raw.range(of: Data(Token.hash(device.token).utf8)) != nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func gzipRequestAndResponse(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let request = SyncMessage(
                maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": .text(String(repeating: "North field ", count: 100))])])
            let response = try await device.post(
                Gzip.compress(request.jsonBytes()),
                headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Accept-Encoding", "br, gzip;q=0.8")])
            #expect(response.status == 200)
            #expect(response.header("Content-Encoding") == "gzip")
            #expect(response.header("Vary") == "Accept-Encoding")
            #expect(Gzip.isGzip(response.body))
            let message = try SyncMessage(json: Gzip.decompress(response.body, limit: 1 << 20), sender: .server)
            #expect(message.permanentID(of: -1, in: "venues") != nil)
        }
    }

    /// A catch-up's entries are spliced into the gzip compressed once each (after the entry
    /// before them); the device's own entry, annotated for it, is compressed with the bytes
    /// around it. Any gzip decoder reads the same bytes as the plain response. A response past
    /// `fastGzipBelow` is compressed whole, for fewer bytes.
    @Test(arguments: StoreKind.all, [true, false])
    func aSplicedCatchUpDecodesToThePlainResponse(store: StoreKind, spliced: Bool) async throws {
        try await withLiveServer(store: store, configure: { if !spliced { $0.fastGzipBelow = 512 } }) { server in
            let writer = try await server.device("writer")
            let reader = try await server.device("reader")
            let start = try await reader.create("venues", ["name": "First"]).revision
            for index in 0..<30 {
                _ = try await (index == 12 ? reader : writer).create("venues", ["name": .text("Venue \(index), north side of the river")])
            }
            let catchUp = SyncMessage(maxRevision: start, changeSets: []).jsonBytes()
            let expected = try await reader.post(catchUp).body
            let gzipped = try await reader.post(catchUp, headers: [("Content-Type", "application/json"), ("Accept-Encoding", "gzip")]).body
            #expect(try SyncMessage(json: expected, sender: .server).changeSets.count == 30)
            #expect(try Gzip.decompress(gzipped, limit: 1 << 20) == expected)
            #expect(try Self.gunzip(gzipped) == expected)
            // Each spliced piece ends with a sync flush's empty stored block.
            let flushes = (0..<(gzipped.count - 3)).filter { gzipped[$0..<($0 + 4)].elementsEqual([0x00, 0x00, 0xFF, 0xFF]) }
            if spliced { #expect(flushes.count >= 25) } else { #expect(flushes.count < 3) }
        }
    }

    /// The system's `gzip`, a decoder that is not zlib.
    private static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let (output, status) = try systemGunzip(bytes)
        #expect(status == 0)
        return output
    }

    @Test(arguments: StoreKind.all)
    func noGzipUnlessAsked(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            for headers in [
                [("Content-Type", "application/json")], [("Content-Type", "application/json"), ("Accept-Encoding", "gzip;q=0")],
            ] {
                let response = try await device.post(Self.emptySync, headers: headers)
                #expect(response.status == 200)
                #expect(response.header("Content-Encoding") == nil)
                #expect(response.bodyText == #"{"maxRevision":0,"changeSets":[],"digest":"0:00000000000000000000000000000000"}"#)
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func bodyOverTheCapIs413(store: StoreKind) async throws {
        try await withLiveServer(store: store, configure: { $0.maxBodySize = 10_000 }) { server in
            let device = try await server.device()
            let big = SyncMessage(
                maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": .text(String(repeating: "x", count: 20_000))])])
            let response = try await device.post(big.jsonBytes())
            #expect(response.status == 413)
            #expect(response.bodyText.contains("body_too_large"))
            #expect(try await server.count("venues") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func gzipBombIs413WithoutInflatingIt(store: StoreKind) async throws {
        try await withLiveServer(store: store, configure: { $0.maxBodySize = 1 << 20 }) { server in
            let device = try await server.device()
            // 64 MiB of spaces inside a valid JSON string compress to about 64 KiB.
            let deflater = Gzip.Deflater(level: 9)
            var bomb = deflater.compress(Array(#"{"maxRevision":0,"changeSets":[],"x":""#.utf8))
            let spaces = [UInt8](repeating: 0x20, count: 1 << 20)
            for _ in 0..<64 { bomb += deflater.compress(spaces) }
            bomb += deflater.compress(Array("\"}".utf8)) + deflater.finish()
            #expect(bomb.count < (1 << 20))
            let response = try await device.post(bomb, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
            #expect(response.status == 413)
            // The server still serves others.
            #expect(try await device.post(Self.emptySync).status == 200)
        }
    }

    @Test(arguments: StoreKind.all)
    func healthReportsTheRevisionWithoutAToken(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            try await device.create("venues", ["name": "V"])
            let response = try await server.send("GET", "/health")
            #expect(response.status == 200)
            let health = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            #expect(health["status"] as? String == "ok")
            #expect(health["maxRevision"] as? Int == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func schemaIsServed(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let response = try await server.send("GET", "/schema", headers: [("Accept-Encoding", "gzip")])
            #expect(response.status == 200)
            #expect(response.header("Content-Encoding") == "gzip")
            #expect(try Schema(json: Gzip.decompress(response.body, limit: 1 << 20)) == Schema.demo)
        }
    }

    @Test(arguments: StoreKind.all)
    func unknownRouteIsAJSON404(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let response = try await server.send("GET", "/nothing-here")
            #expect(response.status == 404)
            #expect(response.bodyText.contains(#""code":"not_found""#))
        }
    }
}
