// Uses the client swift-openapi-generator made from docs/openapi.json against a running server:
// every call below goes through generated types only, so a shape of the document the generator
// cannot handle fails this program's build or its run.
//
//   RevSyncAPIClientCheck --server http://127.0.0.1:8080 --token-file admin.token

import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends the device's token with every request, as the document's `deviceToken` scheme says.
struct BearerToken: ClientMiddleware {
    let token: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}

struct CheckFailed: Error, CustomStringConvertible {
    let description: String
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailed(description: message()) }
}

func required<Value>(_ value: Value?, _ message: @autoclosure () -> String) throws -> Value {
    guard let value else { throw CheckFailed(description: message()) }
    return value
}

func argument(_ name: String) throws -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else {
        throw CheckFailed(description: "usage: RevSyncAPIClientCheck --server URL --token-file FILE")
    }
    return arguments[index + 1]
}

/// The calls, in the order an integrator makes them.
func run() async throws {
    let server = try required(URL(string: argument("--server")), "--server is not a URL")
    let token = try String(contentsOfFile: argument("--token-file"), encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    let client = Client(
        serverURL: server, transport: URLSessionTransport(), middlewares: [BearerToken(token: token)])

    // GET /health and GET /schema.
    let health = try await client.getHealth().ok.body.json
    print("health: \(health.status)")
    let schema = try await client.getSchema().ok.body.json
    try check(schema.entities.additionalProperties["players"] != nil, "the schema has no players")
    print("schema version \(schema.version), \(schema.entities.additionalProperties.count) entities")

    // POST /sync: a new player, with a text, a real, a boolean and a null value.
    let changeSetID = "generated-swift-\(UUID().uuidString)"
    let player = Components.Schemas.RecordValues(additionalProperties: [
        "first_name": .init(value1: "Ana"), "last_name": .init(value1: "Lopez"),
        "height_cm": .init(value3: 151.5), "active": .init(value4: true), "date_of_birth": nil,
    ])
    let sent = Components.Schemas.ChangeSetIn(
        id: changeSetID, types: ["players"],
        additionalProperties: ["players": .init(create: [-1], attributes: .init(additionalProperties: ["-1": player]))])
    let first = try await client.sync(body: .json(.init(maxRevision: 0, changeSets: [sent]))).ok.body.json
    let outcome = try required(first.changeSets.first { $0.id == changeSetID }, "no outcome for the change set")
    try check(outcome.conflict != true, "the change set was refused: \(outcome)")
    let revision = try required(outcome.revision, "no revision in \(outcome)")
    print("sync: committed as revision \(revision)")

    // The committed change set, as another device receives it: the values keep their types.
    let caughtUp = try await client.sync(body: .json(.init(maxRevision: revision - 1, changeSets: []))).ok.body.json
    let committed = try required(caughtUp.changeSets.first { $0.revision == revision }, "revision \(revision) not delivered")
    let players = try required(committed.additionalProperties["players"], "no players in \(committed)")
    let id = try required(players.create?.first, "no created player")
    let values = players.attributes?.additionalProperties["\(id)"]?.additionalProperties ?? [:]
    try check(values["first_name"]??.value1 == "Ana", "first_name: \(String(describing: values["first_name"]))")
    try check(values["height_cm"]??.value3 == 151.5, "height_cm: \(String(describing: values["height_cm"]))")
    try check(values["active"]??.value4 == true, "active: \(String(describing: values["active"]))")
    print("caught up: player \(id) with \(values.count) values")

    // GET /admin/api/history: the record's history, a union of two page shapes.
    let history = try await client.getHistory(query: .init(entity: "players", id: id)).ok.body.json
    guard case .RecordHistoryPage(let page) = history else { throw CheckFailed(description: "not a record's history: \(history)") }
    let created = try required(page.changes.first, "no history")
    try check(created.changeSet == changeSetID, "history names \(String(describing: created.changeSet))")
    try check(created.after?.additionalProperties["first_name"]??.value1 == "Ana", "history's after: \(String(describing: created.after))")
    print("history: \(page.changes.count) change(s), operation \(created.operation)")

    // GET /admin/api/devices and GET /admin/api/overview.
    let devices = try await client.getDevices().ok.body.json
    try check(!devices.devices.isEmpty, "no devices")
    print("devices: \(devices.devices.map(\.name).joined(separator: ", "))")
    let overview = try await client.getOverview().ok.body.json
    try check(overview.records.additionalProperties["players"] == 1, "overview players: \(overview.records)")
    print("overview: revision \(overview.maxRevision), \(overview.devices.total) device(s)")

    // POST /admin/api/revert: one member of a union chosen by name.
    let reverted = try await client.revert(body: .json(.case1(.init(changeSet: changeSetID)))).ok.body.json
    try check(reverted.deleted == 1, "revert: \(reverted)")
    print("revert: revision \(reverted.revision) deleted \(reverted.deleted)")
    print("the generated Swift client works")
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("RevSyncAPIClientCheck: \(error)\n".utf8))
    exit(1)
}
