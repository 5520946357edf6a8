import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pushed change sets that do not start right after the store's revision.
struct PushDoesNotContinue: Error {}

extension LocalStore {
    /// Applies change sets the server pushed (a `changes` event: a sync response body) through
    /// the same path as a sync response, in one transaction, if they continue the store's
    /// revision: the first is the revision after the store's and each follows the one before.
    /// Returns `nil`, changing nothing, if they do not (the device syncs instead) or if the
    /// store already holds them.
    func applyPushed(
        _ json: [UInt8], overwritten: @escaping @Sendable ([RecordReference]) -> Void
    ) async throws -> SyncReport? {
        let schema = self.schema
        let report = try await ownWrite { db -> SyncReport? in
            let state = StoreState(db: db)
            var expected = try state.maxRevision + 1
            let request = PreparedRequest(
                message: SyncMessage(maxRevision: expected - 1, changeSets: []), changeSetIDs: [], snapshotProof: nil)
            let application = try ResponseApplication(db: db, schema: schema, request: request, lenient: false)
            do {
                let pushed = try SyncMessage.decodeResponse(
                    json: json,
                    snapshotBegins: { _ in throw PushDoesNotContinue() },
                    snapshotRecord: { _, _, _ in throw PushDoesNotContinue() },
                    changeSet: { changeSet in
                        guard changeSet.revision == expected, !changeSet.snapshot else { throw PushDoesNotContinue() }
                        expected += 1
                        try application.apply(changeSet)
                    })
                let maxRevision = pushed.maxRevision
                guard maxRevision == expected - 1, maxRevision > request.message.maxRevision else { throw PushDoesNotContinue() }
                return try application.finish(at: maxRevision, digest: pushed.digest, overwritten: overwritten, stageHook: nil)
            } catch is PushDoesNotContinue {
                // Rolled back with the transaction: nothing of it was applied.
                throw PushDoesNotContinue()
            }
        }
        if let report, !report.erasures.isEmpty { _ = await forgetErased(report) }
        return report
    }

    /// Remembers why a sync failed, for ``status()`` (and `revsync status` in another process);
    /// `nil` forgets it (the connection works again).
    func recordSyncFailure(_ message: String?) async {
        _ = try? await ownWrite { db in try StoreState(db: db).set(.lastError, message.map { String($0.prefix(1000)) }) }
    }

    /// Remembers the live mode's state and the process running it, for `revsync status`.
    func recordLiveState(_ state: SyncStatus.State?) async {
        _ = try? await ownWrite { db in
            let stored = StoreState(db: db)
            try stored.set(.liveState, state?.rawValue)
            try stored.set(.liveProcess, state == nil ? nil : String(ProcessInfo.processInfo.processIdentifier))
        }
    }

    /// The live mode's state as the process running it last recorded it, if that process is
    /// still running on this machine.
    public func recordedLiveState() async throws -> (state: SyncStatus.State, process: Int32)? {
        let (state, process) = try await pool.read { db in
            let stored = StoreState(db: db)
            return (try stored.string(.liveState), try stored.integer(.liveProcess))
        }
        guard let state = state.flatMap(SyncStatus.State.init(rawValue:)), let process, process > 0, process <= Int32.max else {
            return nil
        }
        // Signal 0: is the process there (and ours to signal)?
        guard kill(Int32(process), 0) == 0 else { return nil }
        return (state, Int32(process))
    }
}
