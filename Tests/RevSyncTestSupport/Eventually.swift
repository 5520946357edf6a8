/// Polls `condition` until it holds; false after `timeout` (generous: the whole suite runs in
/// parallel on two cores, and waiting is not what the tests that use it measure).
public func eventually(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// What a bounded wait (``within(_:_:_:)``) waited for, when it did not come in time.
public struct TimedOut: Error, CustomStringConvertible {
    public let description: String
}

/// The value of `body`, or ``TimedOut`` naming `what` after `seconds`: a wait that fails the
/// test with what it was waiting for instead of hanging the suite (a stream that never yields,
/// a task that never ends).
public func within<T: Sendable>(
    _ seconds: Double = 60, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(description: "waited \(Int(seconds)) s for \(what), which never came")
        }
        return value
    }
}
