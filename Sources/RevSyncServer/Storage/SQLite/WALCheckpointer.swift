import Foundation
import GRDB

/// Copies the WAL back into the database file from a connection of its own, instead of
/// letting the writer do it.
///
/// SQLite's default (`wal_autocheckpoint`) makes the commit that fills the WAL past 1,000
/// pages do the checkpoint: under a steady load of small syncs that was one request in a
/// hundred waiting 8–40 ms for page copies and an `fsync`, the whole p99. Here a checkpoint
/// runs after about as many writes (`writesPerCheckpoint`, a small sync writes a handful of
/// pages), or after `maximumDelay` when there were fewer. Checkpoints are `PASSIVE`: they never
/// block the writer or the readers.
///
/// The trade (docs/benchmarks.md): at 500 small syncs per second p99 went from 19 ms to 4 ms,
/// while the most syncs per second the server sustains went down by about 14%, the checkpoint
/// now competing with the writer for the two cores instead of pausing it.
final class WALCheckpointer: @unchecked Sendable {
    private let connection: DatabaseQueue
    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "revsync.checkpoint")
    private let lock = NSLock()
    private var writes = 0
    private var lastCheckpoint = ContinuousClock.now

    init(path: String, writesPerCheckpoint: Int = 200, maximumDelay: Duration = .seconds(1)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        configuration.label = "revsync.checkpoint"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(25), repeating: .milliseconds(25), leeway: .milliseconds(10))
        timer.setEventHandler { [unowned self] in
            let due = lock.withLock { () -> Bool in
                let due = writes >= writesPerCheckpoint || (writes > 0 && ContinuousClock.now - lastCheckpoint >= maximumDelay)
                if due {
                    writes = 0
                    lastCheckpoint = .now
                }
                return due
            }
            // A busy moment (another checkpoint running) is retried with the next writes.
            if due { try? connection.inDatabase { try $0.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") } }
        }
        timer.resume()
    }

    /// Counts a write access (a sync's change sets, a token, ...).
    func noteWrite() {
        lock.withLock { writes += 1 }
    }

    func stop() throws {
        timer.cancel()
        queue.sync {}
        try connection.close()
    }
}
