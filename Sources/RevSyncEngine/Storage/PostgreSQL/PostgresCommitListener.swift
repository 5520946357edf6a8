import Foundation
import Logging
import RevSyncProtocol

/// Follows every instance's commits through PostgreSQL's `LISTEN`/`NOTIFY`.
///
/// The revision counter's trigger (migration 3) notifies the channel `revsync_commits` with the
/// new revision whenever a transaction that moved it commits, whichever instance ran it. One
/// connection of its own per instance, on a thread of its own (libpq blocks), listens while the
/// live feed wants other instances' commits (``CommitSignal/wantsOtherInstances``: while a
/// stream is open) and signals ``CommitSignal``; with no stream open it does not listen, so
/// that no commit wakes it (or PostgreSQL's backend for it) for no one. Each time it starts
/// listening, and when its connection broke and was opened again (after 0.1 s, then doubling up
/// to 5 s), the counter is read right after `LISTEN`, so that a commit made while no one
/// listened is not skipped.
struct PostgresCommitListener: Sendable {
    static let channel = "revsync_commits"
    static let applicationName = "revsync commit listener"

    let url: String
    let commits: CommitSignal
    let logger: Logger

    /// Listens until the task is cancelled.
    func run() async {
        let stopped = Locked(false)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    listen(until: stopped)
                    continuation.resume()
                }
                thread.name = "revsync.postgres.listen"
                thread.stackSize = 1 << 20
                thread.start()
            }
        } onCancel: {
            stopped.withLock { $0 = true }
        }
    }

    private func listen(until stopped: Locked<Bool>) {
        var delay = 0.1
        var connection: LibpqConnection?
        while !stopped.current {
            do {
                let open = try connection ?? connect()
                connection = open
                guard commits.waitUntilOtherInstancesAreWanted(timeout: 0.5) else { continue }
                try open.execute("LISTEN \(Self.channel)", [])
                if let revision = try open.firstRow("SELECT revision FROM _rs_counter WHERE id = 1")?.first?.integerValue {
                    commits.committed(revision)
                }
                delay = 0.1
                while !stopped.current && commits.wantsOtherInstances {
                    for payload in try open.notifications(timeout: 0.5) {
                        if let revision = Revision(payload) { commits.committed(revision) }
                    }
                }
                try open.execute("UNLISTEN \(Self.channel)", [])
            } catch {
                connection = nil
                guard !stopped.current else { return }
                logger.warning("listening for commits failed, again in \(delay) s: \(error)")
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            }
        }
    }

    private func connect() throws -> LibpqConnection {
        let connection = try LibpqConnection(url: url)
        // Named, so that an operator sees in `pg_stat_activity` what it is.
        try connection.execute("SET application_name = '\(Self.applicationName)'", [])
        return connection
    }
}
