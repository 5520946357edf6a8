public import Foundation
public import Logging
public import RevSyncProtocol
public import ServiceLifecycle

/// Drops the oldest part of the change log (`--log-retention`), at start and then every hour:
/// entries more than a number of revisions behind the newest, or committed more than a number
/// of days ago.
///
/// The floor is raised first, in a transaction of its own, so that no response is ever built
/// from a log with a hole: a device that claims a revision below it gets a snapshot. Then the
/// entries, the values before each change they hold (history: what revert needs) and the
/// reverts committed at them are deleted in batches of ``batch`` revisions, each its own
/// transaction, so that commits wait for one batch at most. Change set outcomes and the
/// temporary-ID map are not touched: a device retrying a change set committed long ago still
/// gets its acknowledgement (`--outcome-retention-days` governs those).
public struct LogRetention: Service {
    /// How much of the log is kept.
    public enum Policy: Sendable, Hashable, CustomStringConvertible {
        /// The newest `n` revisions.
        case revisions(Int64)
        /// What was committed in the last `n` days.
        case days(Int)

        /// `100000` (revisions) or `30d` (days).
        public init?(_ text: String) {
            if text.hasSuffix("d"), let days = Int(text.dropLast()), days >= 1 {
                self = .days(days)
            } else if let revisions = Int64(text), revisions >= 1 {
                self = .revisions(revisions)
            } else {
                return nil
            }
        }

        public var description: String {
            switch self {
            case .revisions(let count): "\(count) revisions"
            case .days(let days): "\(days) days"
            }
        }
    }

    public let storage: any SyncStorage
    public let policy: Policy
    public let logger: Logger
    /// Revisions deleted per transaction.
    public var batch: Int64 = 500

    public init(storage: any SyncStorage, policy: Policy, logger: Logger) {
        self.storage = storage
        self.policy = policy
        self.logger = logger
    }

    /// What one pass did.
    public struct Pruned: Sendable, Hashable {
        public var floor: Revision
        public var entries: Int
        public var history: Int
    }

    /// Raises the floor as the policy says and deletes what fell below it.
    public func prune(now date: Date = Date()) async throws -> Pruned {
        let policy = self.policy
        let (oldFloor, newFloor) = try await storage.withWriter { writer in
            try writer.transaction { () -> (Revision, Revision) in
                let current = try writer.currentRevision()
                let floor = try writer.logFloor()
                let wanted: Revision =
                    switch policy {
                    case .revisions(let count): current - count
                    case .days(let days):
                        try writer.newestRevision(committedBefore: Int64(date.timeIntervalSince1970) - Int64(days) * 86_400) ?? 0
                    }
                guard wanted > floor else { return (floor, floor) }
                try writer.setLogFloor(wanted)
                return (floor, wanted)
            }
        }
        var pruned = Pruned(floor: newFloor, entries: 0, history: 0)
        var start = oldFloor
        while start < newFloor {
            let (from, end) = (start, min(newFloor, start + batch))
            let (entries, history) = try await storage.withWriter { writer in
                try writer.transaction { try writer.pruneLog(after: from, through: end) }
            }
            pruned.entries += entries
            pruned.history += history
            start = end
        }
        return pruned
    }

    public func run() async throws {
        try await runHourly(logger: logger, failure: "log retention failed") { [self] in
            let pruned = try await prune()
            if pruned.entries > 0 {
                logger.info(
                    "log retention: dropped \(pruned.entries) log entries and \(pruned.history) history rows; the log starts after revision \(pruned.floor)"
                )
            }
        }
    }
}
