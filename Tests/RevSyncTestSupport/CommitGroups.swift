import Foundation
public import RevSyncEngine
public import RevSyncProtocol

/// Sends `requests` at once while the writer is held for a moment, so that they queue up behind
/// it and are written as one commit group; returns each one's result, in the order given.
public func syncAsOneGroup(
    _ engine: SyncEngine, _ storage: any SyncStorage, _ requests: [(message: SyncMessage, device: Device)]
) async throws -> [Result<SyncResponse, any Error>] {
    try await asOneGroup(storage, requests.map { request in { try await engine.sync(SyncRequest(request.message, from: request.device)) } })
}

/// The same, each request as one from the network: its device found by its token (and what
/// its change sets read, read ahead for the whole group).
public func syncAsOneGroup(
    _ engine: SyncEngine, _ storage: any SyncStorage, tokens requests: [(message: SyncMessage, token: String)]
) async throws -> [Result<SyncResponse, any Error>] {
    try await asOneGroup(
        storage, requests.map { request in { try await engine.sync(SyncRequest(request.message, tokenHash: Token.hash(request.token))) } })
}

private func asOneGroup(
    _ storage: any SyncStorage, _ requests: [@Sendable () async throws -> SyncResponse]
) async throws -> [Result<SyncResponse, any Error>] {
    let busy = Task { try await storage.withWriter { _ in Thread.sleep(forTimeInterval: 0.3) } }
    try await Task.sleep(for: .milliseconds(50))
    let results = await withTaskGroup(of: (Int, Result<SyncResponse, any Error>).self) { group in
        for (index, request) in requests.enumerated() {
            group.addTask {
                do {
                    return (index, .success(try await request()))
                } catch {
                    return (index, .failure(error))
                }
            }
        }
        var results: [Int: Result<SyncResponse, any Error>] = [:]
        for await (index, result) in group { results[index] = result }
        return results
    }
    try await busy.value
    return requests.indices.map { results[$0]! }
}

/// Every record of `entity`, each as its values joined by spaces, in ID order.
public func recordTexts(_ entity: String, in storage: any SyncStorage) async throws -> [String] {
    try await storage.withReader { reader in
        var texts: [String] = []
        try reader.allRecords(Schema.demo.entity(entity)!) { texts.append($0.values.map(\.description).joined(separator: " ")) }
        return texts
    }
}
