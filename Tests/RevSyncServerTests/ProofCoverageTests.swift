import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// What a device's proof counts for on the server (protocol section 14): a proof of a revision
/// the server delivered to it, with its rows audited since (`RevSync-Audited`, from clients that
/// audit), for an erasure's receipt; one that a later mismatch of the same revision contradicts
/// no longer stands; and one made with another device's digest proves nothing.
@Suite struct ProofCoverageTests {
    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String? = nil
    ) async throws -> [String: Any] {
        try await HistoryAndRevertTests.admin(server, token, method, path, body).json
    }

    /// The devices still holding the newest erasure's values.
    static func holding(_ server: LiveServer, admin: String) async throws -> [String] {
        let list = try await Self.admin(server, admin, "GET", "/admin/api/erasures")
        return (list["erasures"] as? [[String: Any]])?.first?["devicesHolding"] as? [String] ?? []
    }

    /// The device's row of `GET /admin/api/devices`.
    static func row(_ server: LiveServer, admin: String, _ name: String) async throws -> [String: Any] {
        let list = try await Self.admin(server, admin, "GET", "/admin/api/devices")
        return (list["devices"] as? [[String: Any]])?.first { $0["name"] as? String == name } ?? [:]
    }

    /// A sync of `device` that tells the server its digest at its revision (`digest`), with
    /// `audited` as `RevSync-Audited` (none: the header left out, as a client before 0.13).
    static func prove(_ device: TestDevice, digest: DigestSum, audited: String?) async throws {
        var headers = [("Content-Type", "application/json"), ("RevSync-Digest", "\(device.maxRevision) \(digest) 2")]
        if let audited { headers.append(("RevSync-Audited", audited)) }
        let answer = try await device.post(SyncMessage(maxRevision: device.maxRevision, changeSets: []).jsonBytes(), headers: headers)
        #expect(answer.status == 200)
    }

    @Test(arguments: StoreKind.all)
    func anErasureReceiptWaitsForAProofWhoseRowsWereAuditedSinceTheErasure(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let tablet = try await server.device("tablet")
            let legacy = try await server.device("legacy")
            let (player, _) = try await tablet.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await legacy.sync()
            let erased = try await HistoryAndRevertTests.admin(
                server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(player.rawValue), "reason": "r"}"#)
            #expect(erased.status == 200)
            let erasure = try #require(erased.json["revision"] as? Int)
            let answer = try await tablet.sync()
            try await legacy.sync()
            let digest = try #require(answer.digest)
            #expect(tablet.maxRevision >= erasure)
            // A proof whose rows were not audited since the erasure: the values may still be there.
            try await Self.prove(tablet, digest: digest, audited: "none")
            try await Self.prove(legacy, digest: digest, audited: nil)
            #expect(try await eventually { try await !Self.holding(server, admin: admin.token).contains("legacy") })
            #expect(try await Self.holding(server, admin: admin.token).contains("tablet"))
            #expect(try await Self.row(server, admin: admin.token, "tablet")["auditedRevision"] as? Int == -1)
            // Audited since before the erasure: still not.
            try await Self.prove(tablet, digest: digest, audited: String(erasure - 1))
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await Self.holding(server, admin: admin.token).contains("tablet"))
            // Audited since the erasure: counted erased.
            try await Self.prove(tablet, digest: digest, audited: String(tablet.maxRevision))
            #expect(try await eventually { try await Self.holding(server, admin: admin.token).isEmpty })
        }
    }

    /// A device the erasure was never sent to (it synced before it, and proved what it holds)
    /// reports another device's digest at the server's revision: the forged report proves
    /// nothing, its earlier proof stands as it was, and it still holds the values.
    @Test(arguments: StoreKind.all)
    func anotherDevicesDigestProvesNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let honest = try await server.device("honest")
            let liar = try await server.device("liar")
            let (player, _) = try await honest.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let own = try #require(try await liar.sync().digest)
            try await Self.prove(liar, digest: own, audited: String(liar.maxRevision))
            let proven = Int(liar.maxRevision)
            #expect(try await eventually { try await Self.row(server, admin: admin.token, "liar")["verifiedRevision"] as? Int == proven })
            let erased = try await HistoryAndRevertTests.admin(
                server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(player.rawValue), "reason": "r"}"#)
            #expect(erased.status == 200)
            let answer = try await honest.sync()
            let digest = try #require(answer.digest)
            let report = #"{"revision": \#(answer.maxRevision), "report": "\#(digest)", "ranges": [], "items": []}"#
            let verified = try await server.send(
                "POST", "/verify",
                headers: [
                    ("Authorization", "Bearer \(liar.token)"), ("Content-Type", "application/json"), ("RevSync-Schema-Version", "2"),
                    ("RevSync-Audited", String(answer.maxRevision)),
                ], body: Array(report.utf8))
            #expect(verified.status == 200, "\(verified.bodyText)")
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await Self.holding(server, admin: admin.token).contains("liar"))
            #expect(try await Self.row(server, admin: admin.token, "liar")["verifiedRevision"] as? Int == proven)
            #expect(try await Self.row(server, admin: admin.token, "liar")["verifiedCurrent"] as? Bool == false)
        }
    }

    /// A mismatch reported after a valid proof of the same revision: the proof no longer stands
    /// (the console stops counting the device as proven at the latest).
    @Test(arguments: StoreKind.all)
    func aMismatchAfterAProofOfTheSameRevisionUndoesTheProof(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let tablet = try await server.device("tablet")
            let answer = try await tablet.sync()
            let digest = try #require(answer.digest)
            try await Self.prove(tablet, digest: digest, audited: String(tablet.maxRevision))
            #expect(try await eventually { try await Self.row(server, admin: admin.token, "tablet")["verifiedCurrent"] as? Bool == true })
            try await Self.prove(tablet, digest: DigestSum(count: 99, sum: digest.sum), audited: "none")
            #expect(try await eventually { try await Self.row(server, admin: admin.token, "tablet")["verifiedCurrent"] as? Bool == false })
            #expect(try await Self.row(server, admin: admin.token, "tablet")["verifiedRevision"] is NSNull)
        }
    }

    /// Which came later decides, to the millisecond, also within one second and across the
    /// activity's flushes and the verification's immediate writes: a mismatch after a proof of
    /// the same revision undoes it, a proof made after a mismatch (a repair's) stands, and a
    /// mismatch written late (by the activity) does not undo a proof made after it.
    @Test(arguments: StoreKind.all)
    func aProofAndAMismatchOfTheSameSecondAreOrderedByTheirMilliseconds(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let tablet = try await server.device("tablet")
            let id = tablet.device.id
            let second = Int64(Date().timeIntervalSince1970)
            let ms = second * 1000
            func buffered(proof revision: Revision?, mismatch: Revision?, at milliseconds: Int64) async throws {
                var update = DeviceActivityUpdate(device: id, lastSeen: second)
                if let revision {
                    (update.verifiedRevision, update.verifiedAt, update.verifiedAtMilliseconds) = (revision, second, milliseconds)
                    update.auditedRevision = revision
                }
                if let mismatch {
                    (update.mismatchRevision, update.mismatchAt, update.mismatchAtMilliseconds) = (mismatch, second, milliseconds)
                }
                let written = update
                try await server.storage.withWriter { writer in try writer.transaction { try writer.recordActivity([written], traffic: []) }
                }
            }
            func immediate(equal: Bool, revision: Revision, at milliseconds: Int64) async throws {
                try await server.storage.withAutocommitWriter { writer in
                    try writer.recordVerification(
                        device: id, revision: revision, equal: equal, audited: revision, repaired: 0, atMilliseconds: milliseconds)
                }
            }
            func proven() async throws -> Revision? {
                try await server.storage.withReader { try $0.deviceActivity()[id]?.verifiedRevision }
            }

            // A proof, then (another flush, the same second) a mismatch of its revision: undone.
            try await buffered(proof: 5, mismatch: nil, at: ms + 100)
            #expect(try await proven() == 5)
            try await buffered(proof: nil, mismatch: 5, at: ms + 300)
            #expect(try await proven() == nil)
            // The repair's proof, made after the mismatch: it stands.
            try await immediate(equal: true, revision: 5, at: ms + 500)
            #expect(try await proven() == 5)
            // A mismatch of an earlier moment written afterwards (the activity flushes late): the
            // later proof stands.
            try await buffered(proof: nil, mismatch: 5, at: ms + 400)
            #expect(try await proven() == 5)
            // A sync's proof made before a verification's mismatch, written after it: not taken.
            try await immediate(equal: false, revision: 6, at: ms + 700)
            #expect(try await proven() == nil)
            try await buffered(proof: 6, mismatch: nil, at: ms + 600)
            #expect(try await proven() == nil)
            // A mismatch of an older revision undoes nothing newer.
            try await immediate(equal: true, revision: 7, at: ms + 800)
            try await immediate(equal: false, revision: 6, at: ms + 900)
            #expect(try await proven() == 7)
        }
    }
}
