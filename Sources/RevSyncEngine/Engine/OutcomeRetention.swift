import Foundation
public import Logging
public import ServiceLifecycle

/// Forgets stored change set outcomes older than a number of days, at start and then every
/// hour.
///
/// Outcomes answer repeated change sets after a lost response; once forgotten, a device that
/// retries later than this would have its change set applied again. Keep the retention longer
/// than any device stays offline. Temporary-ID maps are kept forever: they are small, and
/// queued change sets may reference them at any time.
public struct OutcomeRetention: Service {
    public let storage: any SyncStorage
    public let days: Int
    public let logger: Logger

    public init(storage: any SyncStorage, days: Int, logger: Logger) {
        self.storage = storage
        self.days = days
        self.logger = logger
    }

    /// Deletes the outcomes older than the retention; returns how many.
    public func purge() async throws -> Int {
        let cutoff = Int64(Date().timeIntervalSince1970) - Int64(days) * 86_400
        return try await storage.withWriter { writer in
            try writer.transaction { try writer.purgeOutcomes(processedBefore: cutoff) }
        }
    }

    public func run() async throws {
        try await runHourly(logger: logger, failure: "purging old outcomes failed") { [self] in
            let purged = try await purge()
            if purged > 0 { logger.info("forgot \(purged) change set outcomes older than \(days) days") }
        }
    }
}
