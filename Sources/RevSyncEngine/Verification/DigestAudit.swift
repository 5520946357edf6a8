public import Logging
public import ServiceLifecycle

/// Audits the data set's kept digests at start and then every `hours`: every record is read
/// once, in a read transaction that never holds up a commit, and hashed; kept digests that are
/// not the records' (the database was written behind the server's back: a restore in part, a
/// maintenance script) are corrected and the correction is logged as a warning.
///
/// Without it, such a write is noticed only when some device happens to hold the true records
/// and verifies; with it, at the next start or within `hours`: from then on every device's proof
/// compares with the truth, and the devices that hold what was overwritten are repaired.
public struct DigestAudit: Service {
    public let engine: SyncEngine
    public let hours: Int
    public let logger: Logger

    public init(engine: SyncEngine, hours: Int, logger: Logger) {
        self.engine = engine
        self.hours = hours
        self.logger = logger
    }

    public func run() async throws {
        try await runHourly(every: .seconds(3600 * max(1, hours)), logger: logger, failure: "auditing the kept digest failed") {
            [self] in
            if try await engine.correctDigestsIfWrong() {
                logger.warning(
                    "the kept digest of the data set was wrong (its database was written behind the server's back?): corrected from the records by the digest audit"
                )
            }
        }
    }
}
