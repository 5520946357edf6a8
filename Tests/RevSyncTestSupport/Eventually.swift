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
