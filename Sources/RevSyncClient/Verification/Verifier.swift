import Foundation
import RevSyncProtocol

/// A device's side of a verification (`POST /verify`, `docs/protocol.md` section 14): it sends
/// each entity's digest, compares the server's digests of the parts of those that differ with
/// its own, goes down the parts that differ, lists the records of the small ones, and collects
/// the server's answer: the records that differ and the IDs it must drop. Round trips: three
/// for one record among a million.
struct Verifier {
    /// The server is no longer at the store's revision: sync, and verify again.
    struct RevisionMoved: Error {
        let revision: Revision?
    }

    /// What a conversation found.
    struct Outcome {
        /// Whether the store's digest at the revision was the server's.
        var equal: Bool
        /// The records that differ, and the IDs to drop (`nil`: nothing differs).
        var repair: ChangeSet?
        var bytesSent = 0
        var bytesReceived = 0
        var roundTrips = 0
    }

    /// The most rounds of one conversation (three suffice below about two million records per
    /// entity), not counting the rounds that fetch what an answer left `unanswered` (its repair
    /// was full): those go on while each brings records, up to ``maxRepairRounds``.
    static let maxRounds = 12
    /// The most rounds in all: 10,000 records a round, a few million records.
    static let maxRepairRounds = 1_000

    let store: LocalStore
    let transport: any SyncTransport
    let server: LocalStore.ServerConnection
    let gzipLevel: Int32

    /// Compares the store's records with the server's at `revision`, which both must be at.
    ///
    /// - Parameter digest: the store's digest, settled, at `revision`.
    /// - Throws: ``RevisionMoved``, or ``SyncFailure``.
    func compare(at revision: Revision, digest: DataSetDigest) async throws -> Outcome {
        let entities = store.schema.entities.map(\.name)
        var request = VerifyRequest(
            revision: revision, report: digest.total,
            ranges: entities.map { RangeDigest(range: DigestRange(entity: $0), digest: digest[$0]) })
        var outcome = Outcome(equal: true)
        var repair = ChangeSet(revision: revision)
        var miscounted: [String] = []
        var rounds = 0
        var narrowing = 0
        while narrowing < Self.maxRounds, rounds < Self.maxRepairRounds {
            rounds += 1
            let response = try await send(request, into: &outcome)
            // A round that only fetches what the last answer left unanswered narrows nothing.
            let onlyFetching = request.ranges.isEmpty && !response.unanswered.isEmpty && response.repair != nil
            if !onlyFetching { narrowing += 1 }
            if let verified = response.verified { outcome.equal = verified }
            if let received = response.repair { repair.merge(received) }
            // The parts of each range that differs: those whose digest the store shares are
            // settled; a small one is listed record by record, a large one split again.
            let parts = response.ranges.flatMap(\.parts)
            let mine = try await store.sums(of: parts.map(\.range))
            // The parts of a whole entity are all of its records: a kept sum that is not theirs
            // was moved by a write no mark caught (another program's `INSERT OR REPLACE`).
            var offset = 0
            for split in response.ranges {
                var counted = DigestSum.empty
                for sum in mine[offset..<offset + split.parts.count] { counted.add(sum) }
                offset += split.parts.count
                if split.range.isWhole, counted != digest[split.range.entity] { miscounted.append(split.range.entity) }
            }
            var next = VerifyRequest(revision: revision)
            // What the answer's repair had no room for is listed again, from where it stopped.
            var listed: [DigestRange] = response.unanswered
            for (part, sum) in zip(parts, mine) where sum != part.digest {
                if part.digest.count <= Int64(VerificationShape.leaf) || sum.count == 0 {
                    listed.append(part.range)
                } else {
                    next.ranges.append(RangeDigest(range: part.range, digest: sum))
                }
            }
            for (range, var hashes) in zip(listed, try await store.hashes(of: listed)) {
                // A row with ID 0 (another program's insert) is no record the server could have,
                // and 0 is no ID on the wire: it is dropped here rather than listed.
                if hashes.removeValue(forKey: RecordID(0)) != nil {
                    repair[entity: range.entity].delete.append(RecordID(0))
                    repair[entity: range.entity].attributes[RecordID(0)] = RecordAttributes(revision: 0)
                }
                next.items.append(RangeItems(range: range, records: hashes))
            }
            if !response.ranges.isEmpty { outcome.equal = false }
            guard !next.ranges.isEmpty || !next.items.isEmpty else { break }
            request = next
        }
        outcome.repair = repair.changes.isEmpty ? nil : repair
        if outcome.repair != nil { outcome.equal = false }
        // Sums counted again; without a repair to apply (which tells the server its digest),
        // the server hears the store's true one now.
        if !miscounted.isEmpty, let recounted = try await store.recountSums(of: miscounted, at: revision), outcome.repair == nil {
            outcome.equal = try await report(recounted.total, at: revision, into: &outcome) ?? false
        }
        return outcome
    }

    /// Tells the server the store's digest at `revision` (after a repair, or an erasure):
    /// returns whether it is the server's.
    func report(_ digest: DigestSum, at revision: Revision, into outcome: inout Outcome) async throws -> Bool? {
        try await send(VerifyRequest(revision: revision, report: digest), into: &outcome).verified
    }

    private func send(_ request: VerifyRequest, into outcome: inout Outcome) async throws -> VerifyResponse {
        var call = ServerCall("POST", "verify", on: server, schemaVersion: store.schema.version)
        // What a report's proof covers beyond the sums: the store's last complete audit.
        if request.report != nil { call[header: RevSyncHeader.audited] = RevSyncHeader.auditedValue(try await store.auditedRevision()) }
        let sent = call.json(request.jsonBytes(), gzipLevel: gzipLevel)
        let (response, bytes) = try await call.answer(with: transport, limit: 256 << 20)
        outcome.roundTrips += 1
        outcome.bytesSent += sent
        outcome.bytesReceived += response.body.count
        if response.status == 409, let revision = response.headers[RevSyncHeader.key(RevSyncHeader.revision)].flatMap({ Revision($0) }) {
            throw RevisionMoved(revision: revision)
        }
        guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: bytes) }
        do {
            return try VerifyResponse(json: bytes)
        } catch {
            throw SyncFailure.invalidResponse("the verification's answer does not decode: \(error)")
        }
    }
}
