import Logging
import ServiceLifecycle

/// The loop of the server's retention services (``LogRetention``, ``OutcomeRetention``,
/// ``AttachmentRetention``), written once: `work` at start and then every hour until the
/// server shuts down; a failure is logged (as `failure`, with the error) and the next hour
/// tries again, so one bad hour never stops retention.
func runHourly(
    logger: Logger, failure: @autoclosure @escaping @Sendable () -> String, _ work: @escaping @Sendable () async throws -> Void
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
            try? await Task.sleep(for: .seconds(3600))
        }
    }
}
