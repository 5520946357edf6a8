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
    let device: Device
    let requestMaxRevision: Revision
    let writer: any StorageWriter
    let resolver: TemporaryIDResolver

    func process(_ changeSet: ChangeSet) throws -> ChangeSetOutcome {
        let outcome: ChangeSetOutcome = try writer.transaction {
            // The lock comes first: another server instance may be committing this very change
            // set (a client retrying elsewhere), and its outcome must be seen once it commits.
            let current = try writer.lockRevision()
            if let id = changeSet.id, let stored = try writer.outcome(device: device.id, changeSetID: id) {
                switch stored {
                case .committed(let revision):
                    return .repeated(changeSetID: id, revision: revision)
                case .conflict(let reason, let entries):
                    // Answered as the first time, with the server's truth as it is now.
                    return try refusal(changeSet, reason, entries, evaluatedAt: current, store: false)
                }
            }
            let plan: PlannedChangeSet
            switch ChangeSetValidator(schema: schema).validate(changeSet) {
            case .refused(let entries):
                return try refusal(changeSet, .invalid, entries, evaluatedAt: current, store: true)
            case .accepted(let validated):
                plan = validated
            }
            guard device.role.mayWrite else {
                return try refusal(changeSet, .forbidden, forbiddenEntries(changeSet), evaluatedAt: current, store: true)
            }
            let applier = ChangeSetApplier(
                schema: schema, device: device, requestMaxRevision: requestMaxRevision, writer: writer, resolver: resolver)
            var result: ChangeSetApplier.Result?
            try writer.savepoint {
                result = try applier.apply(plan, at: current + 1)
                if case .applied = result { return true }
                return false
            }
            switch result! {
            case .refused(let reason, let entries):
                return try refusal(changeSet, reason, entries, evaluatedAt: current, store: true)
            case .applied(var committed):
                committed.changeSetID = changeSet.id
                try writer.appendLog(
                    LogEntry(
                        revision: committed.revision, device: device.id, changeSetID: changeSet.id,
                        body: committed.changeSet.jsonBytes()))
                for mapping in committed.mappings { try writer.saveMapping(device: device.id, mapping) }
                if let id = changeSet.id {
                    try writer.saveOutcome(device: device.id, changeSetID: id, outcome: .committed(revision: committed.revision))
                }
                try writer.setRevision(committed.revision)
                return .committed(committed)
            }
        }
        if case .committed(let committed) = outcome { resolver.remember(committed.mappings) }
        return outcome
    }

    private func refusal(
        _ changeSet: ChangeSet, _ reason: ConflictReason, _ entries: [ConflictEntry], evaluatedAt: Revision, store: Bool
    ) throws -> ChangeSetOutcome {
        if store, let id = changeSet.id {
            try writer.saveOutcome(device: device.id, changeSetID: id, outcome: .conflict(reason: reason, entries: entries))
        }
        let truth = try ConflictTruth(schema: schema, reader: writer, resolver: resolver).changes(for: changeSet)
        let conflict = ChangeSet(id: changeSet.id, conflict: true, reason: reason, conflicts: entries, changes: truth)
        return .conflict(conflict, evaluatedAt: evaluatedAt)
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
