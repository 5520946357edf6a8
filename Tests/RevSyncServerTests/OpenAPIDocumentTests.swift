import Foundation
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncServer

/// `GET /openapi.json`: the HTTP API's contract, served as `docs/openapi.json` holds it, to
/// anyone. Schemathesis checks the answers against it (`Tests/Contract`, run by
/// `scripts/test`); these check the document and the routes agree.
@Suite struct OpenAPIDocumentTests {
    /// The repository's `docs/openapi.json`.
    static func repositoryDocument() throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: root.appending(path: "docs/openapi.json")))
    }

    @Test func theDocumentIsServedWithoutATokenAsTheRepositoryHoldsIt() async throws {
        try await withLiveServer { server in
            let response = try await server.send("GET", "/openapi.json")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.body == (try Self.repositoryDocument()))
            let document = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            #expect(document["openapi"] as? String == "3.1.0")
        }
    }

    /// Every operation of the document reaches a route (never the `404` of a path the server does
    /// not serve, nor a `405`), and every endpoint the protocol lists is in the document.
    @Test func everyOperationOfTheDocumentIsARouteAndEveryRouteIsDocumented() async throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(Self.repositoryDocument())) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, item) in paths {
            for method in item.keys where ["get", "put", "post", "delete", "head", "patch"].contains(method) {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        try await withLiveServer(configure: { $0.metricsToken = "contract-metrics-token-0123" }) { server in
            // The router's own routes, but the console's pages (HTML for people, not the API).
            let routes = Set(server.http!.routeDescriptions.filter { !$0.contains(" /admin") || $0.contains(" /admin/api/") })
            #expect(routes.count > 15 && routes.contains("PUT /attachments/{sha256}"), "\(routes.sorted())")
            #expect(documented == routes, "\(documented.symmetricDifference(routes).sorted())")
            let open: Set<String> = ["GET /openapi.json", "GET /health", "GET /schema"]
            for operation in documented.sorted() {
                let parts = operation.split(separator: " ")
                let path = String(parts[1]).replacing("{sha256}", with: String(repeating: "a", count: 64))
                let response = try await server.send(String(parts[0]), path)
                // Without a token: the public ones answer, every other asks for a token (an
                // unknown route would be `404`, a wrong method `405`).
                #expect(response.status == (open.contains(operation) ? 200 : 401), "\(operation)")
            }
        }
    }
}
