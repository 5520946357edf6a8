import Foundation
import RevSyncProtocol

/// What processing one change set of a request gave.
enum ChangeSetOutcome: Sendable {
    /// Committed now.
    case committed(CommittedChangeSet)
    /// Committed by an earlier request with the same change set `id` (its response was lost).
    case repeated(changeSetID: String, revision: Revision)
    /// Refused: the conflict change set to send, and the revision that was current when it
    /// was judged (it goes right after that revision's change set in the response).
    case conflict(ChangeSet, evaluatedAt: Revision)
}

/// Processes the change sets of one request, each in its own transaction.
struct ChangeSetProcessor {
    let schema: Schema
    let hashers: VersionHashers
    let device: Device
    /// The `maxRevision` the request claims.
    let claimedRevision: Revision
    /// What the device has been shown to have seen: the lower of ``claimedRevision`` and the
    /// revision the server delivered to it. Unseen changes are judged against this.
    let seenRevision: Revision
    let writer: any StorageWriter
    let resolver: TemporaryIDResolver

    /// How many change sets of a request have their reads prepared together
    /// (``TransactionWriting/prepareReads(_:device:)``).
    static let readAheadWindow = 64

    /// Processes a request's change sets in order, telling the writer what they read a window
    /// at a time: where a read is a round trip (PostgreSQL) a bulk request then costs a round
    /// trip per window, not one per change set. What one of them writes is forgotten from what
    /// was read ahead, so the later ones read it again.
    ///
    func process(_ changeSets: [PreparedChangeSet]) throws -> [ChangeSetOutcome] {
        var outcomes: [ChangeSetOutcome] = []
        outcomes.reserveCapacity(changeSets.count)
        for (index, prepared) in changeSets.enumerated() {
            if index % Self.readAheadWindow == 0, changeSets.count > 1 {
                try writer.prepareReads(
                    changeSets[index..<min(index + Self.readAheadWindow, changeSets.count)].map(\.changeSet), device: device.id)
            }
            outcomes.append(try process(prepared))
        }
        return outcomes
    }

    /// One change set: its fingerprint (``PreparedChangeSet/fingerprint`` when it could be
    /// computed without the ID map), what it names outside the device's version (refused), and
    /// the device's refusal it writes again, marked handled when it commits.
    func process(_ prepared: PreparedChangeSet) throws -> ChangeSetOutcome {
        let changeSet = prepared.changeSet
        let knownFingerprint = prepared.fingerprint
        let outsideVersion = prepared.outsideVersion
        let outcome: ChangeSetOutcome = try writer.transaction {
            // The lock comes first: another server instance may be committing this very change
            // set (a client retrying elsewhere), and its outcome must be seen once it commits.
            let current = try writer.lockRevision()
            try writer.prepareReads(CollectionOfOne(changeSet), device: device.id)
            var fingerprint: String?
            if let id = changeSet.id {
                fingerprint =
                    try knownFingerprint
                    ?? ChangeSetFingerprint(schema: schema) { try resolver.mapping(of: $0, reader: writer)?.permanentID }.fingerprint(
                        of: changeSet)
                if let stored = try writer.outcome(device: device.id, changeSetID: id) {
                    if let storedFingerprint = stored.fingerprint, storedFingerprint != fingerprint {
                        return try refusal(
                            changeSet, .idReused, idReusedEntries(changeSet, stored.outcome), evaluatedAt: current, fingerprint: nil)
                    }
                    switch stored.outcome {
                    case .committed(let revision):
                        return .repeated(changeSetID: id, revision: revision)
                    case .conflict(let reason, let entries):
                        // Answered as the first time, with the server's truth as it is now.
                        return try refusal(changeSet, reason, entries, evaluatedAt: current, fingerprint: nil)
                    }
                }
            }
            guard outsideVersion.isEmpty else {
                return try refusal(changeSet, .invalid, outsideVersion, evaluatedAt: current, fingerprint: fingerprint)
            }
            let plan: PlannedChangeSet
            switch ChangeSetValidator(schema: schema).validate(changeSet) {
            case .refused(let entries):
                return try refusal(changeSet, .invalid, entries, evaluatedAt: current, fingerprint: fingerprint)
            case .accepted(let validated):
                plan = validated
            }
            let ahead = baseRevisionsAhead(plan)
            guard ahead.isEmpty else {
                return try refusal(changeSet, .invalid, ahead, evaluatedAt: current, fingerprint: fingerprint)
            }
            guard device.role.mayWrite else {
                return try refusal(changeSet, .forbidden, forbiddenEntries(changeSet), evaluatedAt: current, fingerprint: fingerprint)
            }
            let applier = ChangeSetApplier(
                schema: schema, device: device, seenRevision: seenRevision, writer: writer, resolver: resolver)
            var result: ChangeSetApplier.Result?
            let apply = {
                result = try applier.apply(plan, at: current + 1)
                if case .applied = result { return true }
                return false
            }
            // A refusal after the first write needs its writes rolled back; one before needs
            // only its reserved IDs given back.
            if applier.refusesOnlyBeforeWriting(plan) {
                try writer.provisionally(apply)
            } else {
                try writer.savepoint(apply)
            }
            switch result! {
            case .refused(let reason, let entries):
                return try refusal(changeSet, reason, entries, evaluatedAt: current, fingerprint: fingerprint)
            case .applied(var committed):
                committed.changeSetID = changeSet.id
                for mapping in committed.mappings { try writer.saveMapping(device: device.id, mapping) }
                try writer.appendHistory(committed.history)
                if !committed.attachments.isEmpty { try writer.markReferenced(committed.attachments, revision: committed.revision) }
                if let id = changeSet.id {
                    try writer.saveOutcome(
                        device: device.id, changeSetID: id, outcome: .committed(revision: committed.revision), fingerprint: fingerprint)
                }
                // The device's user wrote a refused change set again, and it committed: that
                // refusal needs no operator now (only the device's own refusals are touched).
                if let refused = prepared.reapplies, refused != changeSet.id {
                    _ = try writer.markRefusal(device: device.id, changeSetID: refused, handledBy: device.id, at: Self.now())
                }
                try LogCommit(hashers: hashers).commit(
                    LogEntry(
                        revision: committed.revision, device: device.id, changeSetID: changeSet.id, body: committed.changeSet.jsonBytes()),
                    changes: committed.recordChanges, writer: writer)
                return .committed(committed)
            }
        }
        if case .committed(let committed) = outcome { resolver.remember(committed.mappings) }
        return outcome
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// A refusal with the server's truth; kept as the change set's outcome when it has a
    /// `fingerprint` (a first refusal, not the answer to a repeat). A refusal for bytes the server
    /// lacks (`missing_attachment`) is not kept: the device uploads them and sends the same
    /// change set again, which is then judged anew.
    private func refusal(
        _ changeSet: ChangeSet, _ reason: ConflictReason, _ entries: [ConflictEntry], evaluatedAt: Revision, fingerprint: String?
    ) throws -> ChangeSetOutcome {
        let truth = try ConflictTruth(schema: schema, reader: writer, resolver: resolver).changes(for: changeSet)
        if let fingerprint, let id = changeSet.id, reason != .missingAttachment {
            try writer.saveOutcome(
                device: device.id, changeSetID: id, outcome: .conflict(reason: reason, entries: entries), fingerprint: fingerprint)
            let detail = try RefusalDetail(refused: changeSet, truth: truth, reader: writer, resolver: resolver)
            // What it wrote over values erased since its base is not kept either.
            let erased = try RecordErasure.scrub(forRefused: changeSet, reader: writer)
            try writer.saveRefusalDetail(
                device: device.id, changeSetID: id, mine: erased?.removing(from: detail.mine) ?? detail.mine,
                base: erased?.removing(from: detail.base) ?? detail.base, theirs: erased?.removing(from: detail.theirs) ?? detail.theirs)
        }
        let conflict = ChangeSet(id: changeSet.id, conflict: true, reason: reason, conflicts: entries, changes: truth)
        return .conflict(conflict, evaluatedAt: evaluatedAt)
    }

    /// Updates and deletes whose base revision is ahead of the revision the request claims:
    /// no honest device sends one, and trusting it would let a change overwrite what the
    /// device never saw.
    private func baseRevisionsAhead(_ plan: PlannedChangeSet) -> [ConflictEntry] {
        var entries: [ConflictEntry] = []
        for changes in plan.entities {
            let targets = changes.updates.map { ($0.id, $0.baseRevision) } + changes.deletes.map { ($0.id, $0.baseRevision) }
            for (id, base) in targets where base > claimedRevision {
                entries.append(
                    ConflictEntry(
                        type: changes.entity.name, id: id, reason: .invalid, clientRevision: base,
                        message:
                            "the base revision \(base) of \(changes.entity.name) \(id) is ahead of the revision this request claims (\(claimedRevision)); a device only bases changes on revisions it received"
                    ))
            }
        }
        return entries
    }

    /// One entry per record of a change set whose `id` was used before for other content.
    private func idReusedEntries(_ changeSet: ChangeSet, _ first: StoredOutcome) -> [ConflictEntry] {
        let earlier: String
        switch first {
        case .committed(let revision): earlier = "committed at revision \(revision)"
        case .conflict(let reason, _): earlier = "refused (\(reason))"
        }
        let message =
            "this change set's id was already used for a change set with other content, \(earlier); nothing of this one was applied (every change set needs an id of its own)"
        return changeSet.changes.flatMap { changes in
            (changes.create + changes.update + changes.delete).map { id in
                ConflictEntry(
                    type: changes.entity, id: id, reason: .idReused, clientRevision: changes.attributes[id]?.revision, message: message)
            }
        }
    }

    private func forbiddenEntries(_ changeSet: ChangeSet) -> [ConflictEntry] {
        changeSet.changes.flatMap { changes in
            (changes.create + changes.update + changes.delete).map { id in
                ConflictEntry(
                    type: changes.entity, id: id, reason: .forbidden, clientRevision: changes.attributes[id]?.revision,
                    message: "the \(device.role.rawValue) role of \"\(device.name)\" may read but not change data")
            }
        }
    }
}
