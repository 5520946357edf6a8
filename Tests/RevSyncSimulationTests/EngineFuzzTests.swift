import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncSimulation
import RevSyncTestSupport
import Testing

/// Random requests, most of them plausible and some of them mangled, from several devices at
/// once: the server answers each with 200 or a 4xx (never a 5xx), a 4xx changes nothing, and
/// the data keeps every invariant.
@Suite struct EngineFuzzTests {
    @Test(arguments: StoreKind.all, [11, 12] as [UInt64])
    func randomRequestsNeverBreakTheServer(store: StoreKind, seed: UInt64) async throws {
        try await withLiveServer(store: store) { server in
            var devices: [TestDevice] = []
            for index in 0..<3 { devices.append(try await server.device("device \(index)")) }
            var random = SeededRandom(seed: seed)
            var statuses: [Int: Int] = [:]
            for _ in 0..<120 {
                let device = devices[Int(random.next() % 3)]
                let contents = try await server.contents()
                let valid = RequestGenerator(schema: server.schema, contents: contents, device: device).request(&random)
                var body = valid.jsonBytes()
                if random.chance(0.25) { body = Mutator.mutate(body, &random) }
                let revision = try await server.revision()
                let response = try await device.post(body)
                statuses[response.status, default: 0] += 1
                #expect(
                    [200, 400, 413].contains(response.status),
                    "\(response.status): \(response.bodyText.prefix(300)) for \(String(decoding: body.prefix(300), as: UTF8.self))")
                if response.status == 200 {
                    let message = try SyncMessage(json: response.body, sender: .server)
                    device.maxRevision = message.maxRevision
                } else {
                    #expect(try await server.revision() == revision)
                    #expect(try await server.contents() == contents)
                }
            }
            for check in try await ServerInvariants.check(schema: server.schema, storage: server.storage) {
                #expect(check.passed, "\(check.promise): \(check.violations)")
            }
            #expect(statuses[200, default: 0] > 40)
            #expect(statuses[400, default: 0] > 5)
        }
    }
}

/// Builds requests that look like what clients send: creates with references (to existing
/// records, to each other, to nothing), updates and deletes of existing and vanished records
/// with right and wrong base revisions, values of right and wrong types, unknown names.
struct RequestGenerator {
    let schema: Schema
    let contents: [String: [RecordID: [Value]]]
    let device: TestDevice

    func request(_ random: inout SeededRandom) -> SyncMessage {
        var changeSets: [ChangeSet] = []
        for _ in 0..<random.number(in: 1...3) {
            var changeSet = ChangeSet.new(id: random.chance(0.9) ? UUID().uuidString : nil)
            var used: Set<String> = []
            for _ in 0..<random.number(in: 1...4) {
                let entity = random.chance(0.05) ? "ghosts" : random.pick(schema.entities)!.name
                let existing = Array((contents[entity] ?? [:]).keys)
                switch random.number(in: 0...9) {
                case 0...4:
                    let id = device.temporaryID()
                    changeSet = changeSet.creating(entity, id, values(for: entity, &random, changeSet: changeSet))
                case 5...7:
                    let id = random.chance(0.9) ? (random.pick(existing) ?? 999_999) : RecordID(Int64(random.number(in: 1...500)))
                    guard used.insert("\(entity)/\(id)").inserted else { continue }
                    let base = contents[entity]?[id].flatMap { $0.first?.integerValue } ?? 0
                    let revision = random.chance(0.8) ? base : Int64(random.number(in: 0...Int(max(1, base))))
                    changeSet = changeSet.updating(
                        entity, id, base: revision, values(for: entity, &random, changeSet: changeSet, partial: true))
                default:
                    guard let id = random.pick(existing), used.insert("\(entity)/\(id)").inserted else { continue }
                    let base = contents[entity]?[id].flatMap { $0.first?.integerValue } ?? 0
                    changeSet = changeSet.deleting(entity, id, base: random.chance(0.85) ? base : max(0, base - 1))
                }
            }
            if !changeSet.isEmpty { changeSets.append(changeSet) }
        }
        return SyncMessage(maxRevision: device.maxRevision, changeSets: changeSets)
    }

    private func values(
        for entityName: String, _ random: inout SeededRandom, changeSet: ChangeSet, partial: Bool = false
    ) -> [String: Value] {
        guard let entity = schema.entity(entityName) else { return ["name": "ghost"] }
        var values: [String: Value] = [:]
        for attribute in entity.attributes where attribute.isRequired || random.chance(partial ? 0.3 : 0.6) {
            values[attribute.name] = value(for: attribute, &random, changeSet: changeSet)
        }
        if random.chance(0.03) { values["no_such_attribute"] = 1 }
        return values
    }

    private func value(for attribute: Attribute, _ random: inout SeededRandom, changeSet: ChangeSet) -> Value {
        if random.chance(0.04) { return random.pick([.null, .bool(true), .integer(7), .real(2.5), .text("wrong")])! }
        switch attribute.type {
        case .integer: return .integer(Int64(random.number(in: -5...500)))
        case .real: return .real(Double(random.number(in: 0...10_000)) / 7)
        case .boolean: return .bool(random.chance(0.5))
        case .text, .date: return .text(random.pick(["U12", "née", "😀", "'; DROP TABLE teams; --", "", "2014-02-01"])!)
        case .attachment: return .null  // the fuzzed schema has none; bytes would need an upload
        case .reference(let target, _):
            let existing = Array((contents[target] ?? [:]).keys)
            let created = changeSet.changes(for: target)?.create ?? []
            switch random.number(in: 0...9) {
            case 0...5: if let id = random.pick(existing) { return .integer(id.rawValue) }
            case 6...7: if let id = random.pick(created) { return .integer(id.rawValue) }
            case 8: return .integer(-Int64(random.number(in: 1...50)))
            default: return .integer(Int64(random.number(in: 1...2_000)))
            }
            return .integer(Int64(random.number(in: 1...2_000)))
        }
    }
}

/// Byte-level damage to a valid request.
enum Mutator {
    static func mutate(_ bytes: [UInt8], _ random: inout SeededRandom) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<random.number(in: 1...4) {
            guard !bytes.isEmpty else { break }
            let index = random.number(in: 0...(bytes.count - 1))
            switch random.number(in: 0...4) {
            case 0: bytes[index] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.insert(random.pick(Array("{}[]\",:-0123456789eE.\\u".utf8))!, at: index)
            case 2: bytes.remove(at: index)
            case 3: bytes = Array(bytes.prefix(index))
            default: bytes.insert(contentsOf: bytes[index..<min(bytes.count, index + 20)], at: index)
            }
        }
        return bytes
    }
}
