import Foundation
import GRDB

/// Copies the WAL back into the database file from a connection of its own, a few times a
/// second, instead of letting the writer do it.
///
/// SQLite's default (`wal_autocheckpoint`) makes the commit that fills the WAL past 1,000
/// pages do the checkpoint: under a steady load of small syncs that was one request in a
/// hundred waiting about 8 ms for page copies and an `fsync`, the whole p99. Checkpoints here
/// are `PASSIVE`: they never block the writer or the readers, and copy what they can.
final class WALCheckpointer: @unchecked Sendable {
    private let connection: DatabaseQueue
    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "revsync.checkpoint")

    init(path: String, interval: DispatchTimeInterval = .milliseconds(200)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        configuration.label = "revsync.checkpoint"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        let connection = self.connection
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
        timer.setEventHandler {
            // A busy moment (a checkpoint already running) is retried at the next tick.
            try? connection.inDatabase { try $0.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        }
        timer.resume()
    }

    func stop() throws {
        timer.cancel()
        queue.sync {}
        try connection.close()
    }
}
