import Foundation
import RevSyncProtocol

/// A commit group's transaction (``group(checks:reads:_:)``): every transaction of its work a
/// savepoint of one transaction with one commit. Where the driver batches group writes
/// (PostgreSQL), the counters are locked first, with what the group reads, and written once.
extension SQLStorageAccess {
    func group<T>(checks: GroupChecks, reads: GroupReads, _ body: () throws -> T) throws -> T {
        precondition(!grouping, "groups do not nest")
        let failedBefore = connection.failedStatements
        // Checked only at the commit, a failure may have been read by a later savepoint, which
        // went on as if it had been its own: nothing of the group may commit.
        func failedUnplaced() -> Bool { checks == .atCommit && connection.failedStatements != failedBefore }
        self.checks = checks
        defer { self.checks = .eachSavepoint }
        do {
            return try committed(beforeCommit: { if failedUnplaced() { throw GroupStatementFailure() } }) {
                try groupBody(reads: reads, body)
            }
        } catch {
            throw failedUnplaced() ? GroupStatementFailure() : error
        }
    }

    /// The group's transaction: the counters locked first, written once at the end.
    func groupBody<T>(reads: GroupReads, _ body: () throws -> T) throws -> T {
        grouping = true
        defer {
            grouping = false
            deferred = nil
        }
        if options.batchesGroupWrites {
            let row = try lockCatchingUp(reads)
            let locked = row?[0].integerValue ?? 0
            deferred = DeferredCounters(
                revision: locked, lockedRevision: locked, floor: row?[1].integerValue ?? 0,
                digests: row.flatMap { $0.count > 2 ? $0[2].textValue.flatMap(KeptDigestText.parse) : nil })
        }
        let result = try body()
        try writeDelivered()
        if let counters = deferred {
            for (entity, next) in counters.nextIDs {
                try write("UPDATE _rs_ids SET next_id = ? WHERE entity = ?", [.integer(next), .text(entity)])
            }
            if counters.revision != counters.lockedRevision {
                try write(
                    "UPDATE _rs_counter SET revision = ?, digest = ? WHERE id = 1",
                    [.integer(counters.revision), counters.digests.map { .text(KeptDigestText.text(of: $0)) } ?? .null])
            }
        }
        return result
    }

    /// The most log entries of other instances the writer reads when it locks the counter.
    static let catchUpEntries = 256

    /// Locks the revision counter and returns its row. With it, in the same round trip: the
    /// log entries other instances committed since the newest one ``recentLog`` keeps (the lock
    /// waited for their commits), so that the writer answers their devices from memory; and
    /// what the group reads first.
    ///
    /// The entries' `LIMIT` changes no result (the range holds `catchUpEntries` revisions at
    /// most) but the plan: PostgreSQL cannot tell the range's size from a bound computed in the
    /// query, guessed a third of the log, and read it by bitmap and sorted it; with the limit it
    /// walks the primary key in order from the bound.
    func lockCatchingUp(_ reads: GroupReads) throws -> [SQLValue]? {
        var statements: [(sql: String, arguments: [SQLValue])] = [(dialect.lockRevision, [])]
        if let newest = recentLog?.newest {
            statements.append(
                (
                    """
                    SELECT revision, device_id, change_set_id, body, digest FROM _rs_log
                    WHERE revision > GREATEST(?, (SELECT revision FROM _rs_counter WHERE id = 1) - ?) ORDER BY revision LIMIT ?
                    """, [.integer(newest), .integer(Int64(Self.catchUpEntries)), .integer(Int64(Self.catchUpEntries))]
                ))
        }
        let results = try read(deviceReads(tokenHashes: reads.tokenHashes) + cacheReads(reads.changeSets), after: statements)
        if results.count > 1 { recentLog?.committed(try results[1].map(Self.logEntry)) }
        return results[0].first
    }

    /// Writes the delivered revisions the group raised (``pendingDelivered``), in the order of
    /// the devices' IDs.
    func writeDelivered() throws {
        guard !pendingDelivered.isEmpty else { return }
        let raised = pendingDelivered.sorted { $0.key < $1.key }
        pendingDelivered = [:]
        try write(
            """
            UPDATE _rs_devices AS d SET delivered_revision = v.revision
            FROM unnest(?::bigint[], ?::bigint[]) AS v(id, revision) WHERE d.id = v.id AND d.delivered_revision < v.revision
            """, [Self.array(raised.map { String($0.key) }), Self.array(raised.map { String($0.value) })])
    }
}
