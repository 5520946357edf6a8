import Foundation
public import RevSyncProtocol

/// What a repair changed on the device: per entity, and record by record.
public struct RepairReport: Sendable, Hashable {
    /// The revision at which the device's records were compared with the server's.
    public var revision: Revision
    /// Per entity: records updated, inserted and removed.
    public var repaired: [String: RepairCounts]
    /// Each record that differed, and how.
    public var differences: [RecordDifference]

    /// A repair at `revision`, as its parts say.
    public init(revision: Revision, repaired: [String: RepairCounts], differences: [RecordDifference]) {
        self.revision = revision
        self.repaired = repaired
        self.differences = differences
    }

    /// `Repaired 3 records that differed from the server: players 7 and 9 changed; tags 4 removed`:
    /// each record by its ID when an entity has a few of a kind (at most ``namedRecords``), else
    /// counted (`players 1,200 records changed`).
    public var summary: String {
        let total = repaired.values.reduce(0) { $0 + $1.total }
        let parts = repaired.keys.sorted().compactMap { entity -> String? in
            let counts = repaired[entity]!
            let moved = [(counts.updated, RecordDifference.Kind.changed), (counts.inserted, .missing), (counts.removed, .extra)]
                .compactMap { count, kind -> String? in
                    guard count > 0 else { return nil }
                    let ids = differences.filter { $0.record.entity == entity && $0.kind == kind }.map(\.record.id.rawValue).sorted()
                    guard ids.count == count, count <= Self.namedRecords else {
                        return "\(count.formatted()) record\(count == 1 ? "" : "s") \(Self.word(kind))"
                    }
                    let named = ids.map(String.init)
                    return (named.count == 1 ? named[0] : named.dropLast().joined(separator: ", ") + " and " + named.last!)
                        + " \(Self.word(kind))"
                }
            return moved.isEmpty ? nil : "\(entity) " + moved.joined(separator: ", ")
        }
        return "Repaired \(total) record\(total == 1 ? "" : "s") that differed from the server: \(parts.joined(separator: "; "))"
    }

    /// The most records of one entity and kind ``summary`` names by ID; more are counted.
    public static let namedRecords = 5

    private static func word(_ kind: RecordDifference.Kind) -> String {
        switch kind {
        case .changed: "changed"
        case .missing: "added"
        case .extra: "removed"
        }
    }
}

/// What a verification found and did (``Synchronizer/verify(repair:)``, `revsync verify`).
public struct VerificationReport: Sendable, Hashable {
    /// The revision at which the device's records were compared with the server's.
    public var revision: Revision = 0
    /// The revision at which they are proven equal now, at once or after the repair; `nil`
    /// when they are not (`repair: false`, or a repair the server did not confirm).
    public var verifiedRevision: Revision?
    /// Whether they were equal before any repair.
    public var equal = true
    /// The records that differed, and how.
    public var differences: [RecordDifference] = []
    /// What the repair changed, per entity (empty without one).
    public var repaired: [String: RepairCounts] = [:]
    /// Records that differed in an entity whose kept sum was not its records': written behind
    /// the store's back where no mark caught it (the full check counts every sum again).
    public var rehashed: [RecordReference] = []
    /// The bytes of the request bodies sent: the sync that brought the device to the server's
    /// revision, and every request of the comparison.
    public var bytesSent = 0
    /// The bytes of the response bodies received, the same way.
    public var bytesReceived = 0
    /// The requests made: the sync, and each `POST /verify`.
    public var roundTrips = 0
}

/// Something the store tells the app (``LocalStore/events()``).
public enum StoreEvent: Sendable, Hashable {
    /// The store's records differed from the server's and were repaired.
    case repaired(RepairReport)
}

extension Synchronizer {
    /// The most times a verification starts again because the server moved on meanwhile.
    static let verificationAttempts = 4

    /// Verifies the device's records against the server's, from scratch: every record hashed
    /// again from the tables (no stored hash trusted), a sync without the outbox (the device
    /// at the server's revision; its queued change sets wait), then the comparison, range by
    /// range, and (unless `repair` is `false`) the repair, in one transaction, told to the
    /// server. Records with local edits not yet synced keep them.
    ///
    /// - Throws: ``SyncFailure``; a repair half done is never applied.
    public func verify(repair: Bool = true) async throws -> VerificationReport {
        try await exclusively { try await self.performVerification(repair: repair) }
    }

    private func performVerification(repair: Bool) async throws -> VerificationReport {
        var server = self.server
        if server == nil { server = try await store.server() }
        guard let server else { throw SyncFailure.notConfigured }
        let recounted = Set(try await store.recountDigest())
        var report = try await compareAndRepair(server, target: try await SchemaTarget.of(store), repair: repair)
        report.rehashed = report.differences.map(\.record).filter { recounted.contains($0.entity) }
        return report
    }

    private func compareAndRepair(
        _ server: LocalStore.ServerConnection, target: SchemaTarget, repair: Bool
    ) async throws -> VerificationReport {
        var report = VerificationReport()
        for _ in 0..<Self.verificationAttempts {
            let pulled = try await send(to: server, target: target, lenient: false, pullOnly: true)
            report.roundTrips += 1
            report.bytesSent += pulled.bytesSent
            report.bytesReceived += pulled.bytesReceived
            let (revision, digest) = try await store.settledDigest()
            report.revision = revision
            var outcome: Verifier.Outcome
            do {
                outcome = try await verifier(server).compare(at: revision, digest: digest)
            } catch is Verifier.RevisionMoved {
                continue
            }
            func tally(_ outcome: Verifier.Outcome) {
                report.roundTrips += outcome.roundTrips
                report.bytesSent += outcome.bytesSent
                report.bytesReceived += outcome.bytesReceived
            }
            tally(outcome)
            report.equal = outcome.equal
            guard let changes = outcome.repair else {
                report.verifiedRevision = outcome.equal ? revision : nil
                try await store.recordVerification(verifiedAt: report.verifiedRevision, pending: !outcome.equal)
                return report
            }
            guard repair else {
                report.differences = try await store.differences(in: changes)
                try await store.recordVerification(verifiedAt: nil, pending: true)
                return report
            }
            stageHook?(.repairReceived)
            guard let applied = try await store.applyRepair(changes, at: revision) else { continue }
            report.differences = applied.differences
            report.repaired = applied.counts
            var confirmation = Verifier.Outcome(equal: true)
            // A lost answer leaves the repair applied and unproven: the next sync proves it.
            let confirmed = (try? await verifier(server).report(applied.digest, at: revision, into: &confirmation)) ?? nil
            tally(confirmation)
            report.verifiedRevision = confirmed == true ? revision : nil
            try await store.recordVerification(verifiedAt: report.verifiedRevision, pending: confirmed != true)
            announce(RepairReport(revision: revision, repaired: applied.counts, differences: applied.differences))
            return report
        }
        throw SyncFailure.network("the server's data set kept changing during the verification; try again")
    }

    /// After a sync: a store whose digest differed from the server's narrows the difference
    /// down and repairs it (starting again after a sync of its own when the server moved on);
    /// a store proven equal after an erasure tells the server at once, so that the erasure's
    /// receipt counts it.
    func proveOrRepair(_ report: inout SyncReport, server: LocalStore.ServerConnection, target: SchemaTarget) async throws {
        if report.verified == true {
            if !report.erasures.isEmpty, let digest = report.digest {
                var outcome = Verifier.Outcome(equal: true)
                // Best effort: the next request's RevSync-Digest header tells the server all the same.
                _ = try? await verifier(server).report(digest, at: report.maxRevision, into: &outcome)
            }
            return
        }
        guard report.verified == false else { return }
        do {
            try await repair(&report, server: server, target: target)
        } catch let failure as SyncFailure where failure.code != .deviceWiped {
            // The sync stands; what differs is repaired by the next one. (A wipe order is not a
            // failure to repair: the sync hears it and wipes.)
            try await store.recordVerification(verifiedAt: nil, pending: true)
            report.repairFailure = failure.description
        }
    }

    private func repair(_ report: inout SyncReport, server: LocalStore.ServerConnection, target: SchemaTarget) async throws {
        for _ in 0..<Self.verificationAttempts {
            let (revision, digest) = try await store.settledDigest()
            var outcome = Verifier.Outcome(equal: false)
            defer {
                report.verificationBytesSent += outcome.bytesSent
                report.verificationBytesReceived += outcome.bytesReceived
                report.verificationRoundTrips += outcome.roundTrips
            }
            do {
                outcome = try await verifier(server).compare(at: revision, digest: digest)
            } catch is Verifier.RevisionMoved {
                // Others committed meanwhile: their changes first; the comparison starts again.
                let later = try await send(to: server, target: target, lenient: false, pullOnly: true)
                report.append(later)
                if later.verified != false { return }
                continue
            }
            if outcome.repair != nil { stageHook?(.repairReceived) }
            guard let changes = outcome.repair, let applied = try await store.applyRepair(changes, at: revision) else {
                report.verified = outcome.equal ? true : report.verified
                try await store.recordVerification(verifiedAt: outcome.equal ? revision : nil, pending: !outcome.equal)
                if !outcome.equal {
                    report.repairFailure =
                        "the records differ from the server's and the repair could not be applied; the next sync tries again"
                }
                return
            }
            // The server confirms (and remembers) the proof; if its answer is lost, the digest
            // the sync brought for this revision proves it here, and the next sync's header
            // tells the server.
            let confirmed = (try? await verifier(server).report(applied.digest, at: revision, into: &outcome)) ?? nil
            let proven = confirmed ?? (report.maxRevision == revision && report.digest == applied.digest)
            report.verified = proven
            for (entity, counts) in applied.counts { report.repaired[entity, default: RepairCounts()].add(counts) }
            report.differences += applied.differences
            try await store.recordVerification(verifiedAt: proven ? revision : nil, pending: confirmed != true)
            if !proven { report.repairFailure = "the repair was applied but not proven; the next sync verifies again" }
            announce(RepairReport(revision: revision, repaired: applied.counts, differences: applied.differences))
            return
        }
        try await store.recordVerification(verifiedAt: nil, pending: true)
        report.repairFailure = "the server's data set kept changing during the repair; the next sync repairs"
    }

    private func verifier(_ server: LocalStore.ServerConnection) -> Verifier {
        Verifier(store: store, transport: transport, server: server, gzipLevel: configuration.gzipLevel)
    }

    private func announce(_ repair: RepairReport) {
        broadcaster.emit(.repaired(repair))
        store.storeEvents.emit(.repaired(repair))
    }
}
