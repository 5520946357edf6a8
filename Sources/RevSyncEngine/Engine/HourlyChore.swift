import Logging
import ServiceLifecycle

/// The loop of the server's retention services (``LogRetention``, ``OutcomeRetention``,
/// ``AttachmentRetention``) and its digest audit (``DigestAudit``), written once: `work` at
/// start and then every `period` (an hour) until the server shuts down; a failure is logged (as
/// `failure`, with the error) and the next round tries again, so one bad hour never stops them.
func runHourly(
    every period: Duration = .seconds(3600), logger: Logger, failure: @autoclosure @escaping @Sendable () -> String,
    _ work: @escaping @Sendable () async throws -> Void
) async throws {
    try await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            do {
                try await work()
            } catch is CancellationError {
                return
            } catch {
                logger.error("\(failure()): \(error)")
            }
            // Cancelled at shutdown: the loop ends, and the service with it, cleanly.
            try? await Task.sleep(for: period)
        }
    }
}
