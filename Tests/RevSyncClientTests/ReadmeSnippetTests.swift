import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The README's Swift block, compiled and run: the lines between the markers below are the
/// block, word for word (the first test compares them), and the second runs them against a
/// live server. The README's shell blocks are run by `scripts/readme-test`.
@Suite struct ReadmeSnippetTests {
    /// The README's block, as written there: `path`, `server`, `token` and `render` are the app's.
    static func readmeSnippet(path: String, server: URL, token: String, render: @escaping @Sendable ([Player]) -> Void) async throws {
        // README begin
        // At every launch: the first starts from the server's snapshot of the app's schema version;
        // after an app update, the store follows its new types in place at its next sync.
        let store = try await LocalStore.bootstrap(
            at: path, downloadingFrom: .init(url: server, token: token), pinnedTo: Player.schemaVersion
        ).store
        try await store.database.write { db in
            var team = Team(name: "U12")
            try team.insert(db)  // team.id == -1 until it syncs
            _ = try Player(firstName: "Ana", lastName: "Lopez").inserted(db)
        }
        let synchronizer = Synchronizer(store: store)
        try await synchronizer.sync(retrying: RetryPolicy())  // or stay live: synchronizer.live()

        let players = ValueObservation.tracking { db in try Player.order(Player.Columns.lastName).fetchAll(db) }
        for try await list in players.values(in: store.database) { render(list) }  // local writes, syncs and pushes
        // README end
    }

    @Test func theReadmeShowsTheSnippetThisFileCompiles() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appending(path: "README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let marked = source.components(separatedBy: "// README begin\n")[1].components(separatedBy: "        // README end")[0]
        let snippet = marked.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0)
        }
        .joined(separator: "\n")
        let block = readme.components(separatedBy: "```swift\nimport RevSyncClient   // brings GRDB along\n\n")[1].components(
            separatedBy: "```")[0]
        #expect(block == snippet)
    }

    @Test func theReadmeSnippetSyncsAndObserves() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let token = try await server.device("readme").token
                let (lists, continuation) = AsyncStream.makeStream(of: [Player].self)
                let app = Task {
                    try await Self.readmeSnippet(
                        path: directory.file("app.sqlite"), server: server.url, token: token,
                        render: { continuation.yield($0) })
                }
                var iterator = lists.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect(first.map(\.lastName) == ["Lopez"])
                #expect(first.allSatisfy { !$0.id.isTemporary })  // synced before the first render
                #expect(try await server.revision() == 1)  // one transaction, one change set
                app.cancel()
                _ = await app.result
            }
        }
    }
}
