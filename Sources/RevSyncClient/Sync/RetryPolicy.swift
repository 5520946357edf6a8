import Foundation
import RevSyncProtocol

/// Waits between attempts: exponential backoff with full jitter.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The wait before the first retry.
    public var initialDelay: Duration
    /// The longest wait between two attempts.
    public var maxDelay: Duration
    /// How much each wait grows over the one before.
    public var multiplier: Double

    /// A policy of `maxAttempts` attempts with waits growing from `initialDelay` to `maxDelay`.
    public init(
        maxAttempts: Int = 6, initialDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30), multiplier: Double = 2
    ) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
    }

    /// The wait after failed attempt `attempt` (1 for the first): a random duration between
    /// zero and `initialDelay × multiplier^(attempt-1)`, capped at `maxDelay`.
    public func delay(after attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let base = Double(initialDelay.components.seconds) + Double(initialDelay.components.attoseconds) / 1e18
        let cap = Double(maxDelay.components.seconds) + Double(maxDelay.components.attoseconds) / 1e18
        let ceiling = min(cap, base * pow(multiplier, Double(max(0, attempt - 1))))
        return .milliseconds(Int64(Double.random(in: 0...ceiling, using: &random) * 1000))
    }
}
