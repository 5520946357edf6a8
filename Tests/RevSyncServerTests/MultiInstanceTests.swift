import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Several stateless server processes on one PostgreSQL database.
@Suite struct MultiInstanceTests {
    @Test(.enabled(if: StoreKind.all.contains(.postgres)), arguments: [7, 8] as [UInt64])
    func threeInstancesKeepEveryPromise(seed: UInt64) async throws {
        try await withTestDatabase(.postgres) { database in
            // The schema and the devices first, so that no instance creates an admin token.
            let storage = try await database.open(schema: .demo)
            let server = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            var editors: [Replica] = []
            for index in 0..<6 { editors.append(Replica(device: try await server.device("editor \(index)"))) }
            var readers: [Replica] = []
            for index in 0..<3 { readers.append(Replica(device: try await server.device("reader \(index)"))) }

            let (instances, ports) = try await ExecutableProcess.serverInstances(3, database: database.location)
            defer { for instance in instances { instance.terminate() } }
            // Devices spread across the instances.
            func rebind(_ replica: Replica, _ index: Int) -> Replica {
                Replica(device: replica.device.rebound(to: server.instance(on: ports[index % ports.count])))
            }
            editors = editors.enumerated().map { rebind($1, $0) }
            readers = readers.enumerated().map { rebind($1, $0 + 1) }

            // A shared starting point.
            for name in ["U10", "U12", "U14"] { _ = editors[0].create("teams", ["name": .text(name)]) }
            for name in ["Ana", "Ben", "Cai", "Dee", "Eve"] {
                _ = editors[0].create("players", ["first_name": .text(name), "last_name": "X"])
            }
            try await editors[0].sync()

            // Editors edit the same records at once; readers keep catching up meanwhile.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, editor) in editors.enumerated() {
                    let box = UncheckedBox(editor)
                    group.addTask {
                        var random = SeededRandom(seed: seed &* 100 &+ UInt64(index))
                        for _ in 0..<15 {
                            for _ in 0..<random.number(in: 1...3) { box.value.randomEdit(&random) }
                            try await box.value.sync()
                        }
                    }
                }
                for reader in readers {
                    let box = UncheckedBox(reader)
                    group.addTask { for _ in 0..<25 { try await box.value.sync() } }
                }
                try await group.waitForAll()
            }
            for replica in editors + readers { try await replica.sync() }
            for replica in editors + readers { try await replica.sync() }

            // Every device holds exactly the server's data.
            let truth = try await server.contents()
            let maxRevision = try await server.revision()
            for replica in editors + readers {
                let diff = differences(replica.contents, truth)
                #expect(diff.isEmpty, "\(replica.device.device.name): \(diff)")
                #expect(replica.maxRevision == maxRevision)
                #expect(replica.outbox.isEmpty)
            }
            // Revisions 1...max are each exactly one change set.
            let log = try await server.log()
            #expect(log.map(\.revision) == Array(1...maxRevision))
            // Every refused change set was reported to its device as a conflict, and every
            // committed one as committed: the device's view matches the server's record.
            var refusals = 0
            for replica in editors {
                let device = replica.device.device.id
                for (id, refused) in replica.outcomes {
                    let stored = try await storage.withReader { try $0.outcome(device: device, changeSetID: id)?.outcome }
                    switch stored {
                    case .conflict: #expect(refused, "\(id) was refused but reported committed")
                    case .committed: #expect(!refused, "\(id) was committed but reported refused")
                    case nil: Issue.record("no outcome stored for \(id)")
                    }
                    if refused { refusals += 1 }
                }
            }
            #expect(refusals > 0)
            // Nothing was created twice: every created ID appears in exactly one change set.
            var created: [String: Set<RecordID>] = [:]
            for entry in log {
                let changeSet = try ChangeSet(json: entry.body, sender: .server)
                for changes in changeSet.changes {
                    for id in changes.create {
                        #expect(created[changes.entity, default: []].insert(id).inserted, "\(changes.entity) \(id) created twice")
                    }
                }
            }
            for instance in instances { instance.terminate() }
            for instance in instances { #expect(await instance.exitStatus() == 0) }
            try await storage.close()
        }
    }
}

/// Exactly once across instances with group commit: the same change set sent many times at
/// once (a device retrying after lost responses) to two instances is committed once, and every
/// answer names the same revision.
@Suite(.enabled(if: StoreKind.all.contains(.postgres))) struct MultiInstanceExactlyOnceTests {
    @Test func concurrentRetriesAcrossTwoInstancesCommitOnce() async throws {
        try await withTestDatabase(.postgres) { database in
            let storage = try await database.open(schema: .demo)
            let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            let alice = try await setup.device("alice")
            let others = [try await setup.device("bob"), try await setup.device("carol")]
            let (instances, ports) = try await ExecutableProcess.serverInstances(2, database: database.location)
            defer { for instance in instances { instance.terminate() } }
            let body = SyncMessage(
                maxRevision: 0, changeSets: [ChangeSet.new(id: "retried-everywhere").creating("teams", -1, ["name": "U12"])]
            )
            .jsonBytes()
            let headers = [("Authorization", "Bearer \(alice.token)"), ("Content-Type", "application/json")]
            let answers = try await withThrowingTaskGroup(of: RawHTTPResponse.self) { group in
                for attempt in 0..<12 {
                    let port = ports[attempt % 2]
                    group.addTask { try await RawHTTPClient.send(port: port, method: "POST", path: "/sync", headers: headers, body: body) }
                }
                // Others commit meanwhile, in the same groups.
                for (index, other) in others.enumerated() {
                    let port = ports[index % 2]
                    let token = other.token
                    group.addTask {
                        let create = SyncMessage(
                            maxRevision: 0, changeSets: [ChangeSet.new().creating("teams", -1, ["name": .text("other \(index)")])]
                        ).jsonBytes()
                        return try await RawHTTPClient.send(
                            port: port, method: "POST", path: "/sync",
                            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: create)
                    }
                }
                var answers: [RawHTTPResponse] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.allSatisfy { $0.status == 200 })
            let outcomes = try answers.compactMap { answer in
                try SyncMessage(json: answer.body, sender: .server).outcome(of: "retried-everywhere")
            }
            #expect(outcomes.count == 12 && outcomes.allSatisfy { $0.conflict != true })
            #expect(Set(outcomes.compactMap(\.revision)).count == 1)
            #expect(try await setup.count("teams") == 3)
            for instance in instances { instance.terminate() }
            try await storage.close()
        }
    }
}

@Suite struct ConcurrentStartTests {
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func instancesStartingAtOnceSetUpOnceAndCreateOneAdminToken() async throws {
        try await withTestDatabase(.postgres) { database in
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            var instances: [ExecutableProcess] = []
            for index in 0..<3 {
                instances.append(
                    try ExecutableProcess(
                        "revsync-server",
                        ["--port", "0", "--database", database.location, "--admin-token-file", directory.file("admin-token-\(index)")]))
            }
            var outputs: [String] = []
            for instance in instances { outputs.append(try await instance.waitForOutput(containing: "listening on")) }
            #expect(outputs.filter { $0.contains("Created the first admin token") }.count == 1)
            for instance in instances { instance.terminate() }
            for instance in instances { #expect(await instance.exitStatus() == 0) }

            // A newer schema, taken up by several instances at once: upgraded once.
            let v2 = try Schema(
                json: Array(
                    Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 3,"#)
                        .replacing(
                            #""unit": { "type": "text" },"#, with: #""unit": { "type": "text" }, "decimals": { "type": "integer" },"#
                        ).utf8))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { try await database.open(schema: v2).close() } }
                try await group.waitForAll()
            }
            let storage = try await database.open(schema: v2)
            #expect(try await storage.withReader { try $0.allDevices().count } == 1)
            try await storage.close()
        }
    }
}
