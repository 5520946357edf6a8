import ArgumentParser
import Foundation
@_spi(FaultInjection) import RevSyncClient
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync once: send what is queued, receive what is missing.",
        discussion:
            "Exits with 0 when the sync completed, even if the server refused change sets (they are listed, and kept in `revsync conflicts`); non-zero when it failed."
    )

    @OptionGroup var options: StoreOptions

    @Option(help: "Attempts in all when the network fails or the server has trouble (1: no retry).")
    var attempts: Int = 1

    func run() async throws {
        try await reportingErrors {
            let store = try options.open()
            let synchronizer = makeSynchronizer(store)
            let report =
                attempts > 1
                ? try await synchronizer.sync(retrying: RetryPolicy(maxAttempts: attempts)) : try await synchronizer.sync()
            if options.json {
                say(Output.json(for: report))
            } else {
                for line in Output.lines(for: report) { say(line) }
            }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync whenever something is queued, and every few seconds otherwise, until interrupted (Ctrl-C).")

    @OptionGroup var options: StoreOptions

    @Option(help: "Seconds between syncs when nothing is queued.")
    var interval: Double = 5

    func run() async throws {
        try await reportingErrors {
            guard interval > 0 else { throw CommandFailure("--interval must be more than 0") }
            let store = try options.open()
            let synchronizer = makeSynchronizer(store)
            let stop = InterruptFlag()
            let server = try await store.server()?.url.absoluteString ?? "no server"
            if !options.json {
                say("Watching \(options.store): syncing with \(server) when something is queued and every \(interval) s; Ctrl-C stops.")
            }
            var lastSync = Date.distantPast
            while !stop.isSet {
                if try await synchronizer.hasPendingChanges() || Date().timeIntervalSince(lastSync) >= interval {
                    lastSync = Date()
                    do {
                        let report = try await synchronizer.sync(retrying: RetryPolicy(maxAttempts: 3))
                        if report.sent > 0 || report.received > 0 {
                            if options.json { say(Output.json(for: report)) } else { Output.lines(for: report).forEach(say) }
                        }
                    } catch let failure as SyncFailure {
                        FileHandle.standardError.write(Data("revsync: sync failed: \(failure)\n".utf8))
                        if !failure.isRetryable { throw failure }
                    }
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}

/// The synchronizer of the commands. `REVSYNC_CRASH_AT` (`response-received` or
/// `before-revision`) kills the process at that step: a fault-injection hook for the crash
/// tests, which prove that nothing is lost or doubled.
func makeSynchronizer(_ store: LocalStore) -> Synchronizer {
    let crashAt = ProcessInfo.processInfo.environment["REVSYNC_CRASH_AT"]
    return Synchronizer(
        store: store,
        stageHook: { stage in
            switch (stage, crashAt) {
            case (.responseReceived, "response-received"), (.appliedBeforeRevision, "before-revision"):
                kill(getpid(), SIGKILL)
            default:
                break
            }
        })
}

/// Set by SIGINT or SIGTERM, so that `watch` ends after the sync in progress.
final class InterruptFlag: Sendable {
    private let interrupted = Locked(false)
    /// Kept so that the handlers stay installed.
    private let sources = Locked<[any DispatchSourceSignal]>([])

    init() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber)
            source.setEventHandler { [interrupted] in interrupted.withLock { $0 = true } }
            source.resume()
            sources.withLock { $0.append(source) }
        }
    }

    var isSet: Bool { interrupted.current }
}
