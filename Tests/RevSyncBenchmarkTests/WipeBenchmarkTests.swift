import Foundation
import RevSyncBenchmarks
import RevSyncTestSupport
import Testing

/// `revsync-bench wipe` checks what it measures: a run that leaves a file, gets no receipt to the
/// server or miscounts the records fails (it exited 0 whatever it found).
@Suite struct WipeBenchmarkTests {
    @Test func aSmallWipeKeepsItsPromise() async throws {
        var benchmark = WipeBenchmark(binaries: ExecutableProcess.productsDirectory)
        benchmark.records = 200
        let result = try await benchmark.run()
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.removedRecords == 200 && result.receiptRecords == 200 && result.filesLeft.isEmpty)
    }

    /// Each fault, planted in a result that is otherwise right, is named.
    @Test func eachFaultItChecksIsReported() {
        var right = WipeBenchmark.Result()
        (right.records, right.removedRecords, right.receiptOnServer, right.receiptRecords) = (10, 10, true, 10)
        #expect(right.problems.isEmpty)
        var fileLeft = right
        fileLeft.filesLeft = ["tablet.sqlite-wal"]
        var noReceipt = right
        (noReceipt.receiptOnServer, noReceipt.receiptRecords) = (false, nil)
        var miscounted = right
        miscounted.removedRecords = 9
        var receiptMiscounted = right
        receiptMiscounted.receiptRecords = 11
        for (fault, expected) in [
            (fileLeft, "files"), (noReceipt, "no receipt"), (miscounted, "report counts"), (receiptMiscounted, "receipt counts"),
        ] {
            #expect(fault.problems.count == 1 && fault.problems[0].contains(expected), "\(fault.problems)")
        }
    }
}
