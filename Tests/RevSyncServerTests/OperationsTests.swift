import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// What operators rely on: PostgreSQL restarts and graceful shutdown.
@Suite struct OperationsTests {
    @Test(.enabled(if: PrivatePostgres.isAvailable))
    func requestsFailWith503WhilePostgreSQLIsDownAndWorkAgainOnceItIsBack() async throws {
        let postgres = try await PrivatePostgres.start()
        do {
            try await withLiveServer(database: .existing(.postgres, location: postgres.url)) { server in
                let device = try await server.device()
                try await device.create("venues", ["name": "North"])

                try await postgres.pause()
                let body = SyncMessage(maxRevision: device.maxRevision, changeSets: [.new().creating("venues", -2, ["name": "South"])])
                    .jsonBytes()
                let down = try await device.post(body)
                #expect(down.status == 503)
                #expect(down.bodyText.contains(#""code":"unavailable""#))
                #expect(try await server.send("GET", "/health").status == 503)

                try await postgres.resume()
                let back = try await device.post(body)
                #expect(back.status == 200, "\(back.bodyText)")
                #expect(try await server.count("venues") == 2)
                #expect(try await server.send("GET", "/health").status == 200)
            }
        } catch {
            await postgres.remove()
            throw error
        }
        await postgres.remove()
    }

    @Test(arguments: StoreKind.all)
    func shutdownFinishesTheSyncInFlight(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in
            try await database.setUp()
            let token = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", database.location, "--name", "d"]
            )
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try ExecutableProcess("revsync-server", ["--port", "0", "--database", database.location])
            let port = try #require(CommandLineTests.port(in: try await server.waitForOutput(containing: "listening on")))

            // A request whose body is still arriving when the server is told to stop.
            let body = SyncMessage(maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": "In flight"])]).jsonBytes()
            let head = Array(
                "POST /sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                    .utf8)
            let connection = try RawHTTPConnection(port: port)
            try await RawHTTPConnection.run { try connection.send(head + body.prefix(10)) }
            try await Task.sleep(for: .milliseconds(200))
            server.terminate()
            try await Task.sleep(for: .milliseconds(300))
            let response = try await RawHTTPConnection.run {
                try connection.send(Array(body.dropFirst(10)))
                return String(decoding: try connection.receiveAll(), as: UTF8.self)
            }
            #expect(response.hasPrefix("HTTP/1.1 200"), "\(response)")
            #expect(response.contains("\"__oldId__\":-1"))
            #expect(await server.exitStatus() == 0)
            // It committed, and nothing else came in after the signal.
            let storage = try await database.open(schema: .demo)
            #expect(try await storage.withReader { try $0.currentRevision() } == 1)
            try await storage.close()
        }
    }
}
