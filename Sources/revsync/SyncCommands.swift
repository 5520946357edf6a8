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

    @Flag(help: "An empty store receives every record as JSON instead of starting from the server's snapshot (GET /snapshot).")
    var noSnapshot = false

    func run() async throws {
        try await reportingErrors {
            // A wiped store: its receipt, if the server has not had it yet, and the wipe in words.
            if LocalStore.wipeReport(at: options.store) != nil { throw try await options.wiped() }
            let store = try await options.open()
            let synchronizer = makeSynchronizer(store, startFromSnapshot: !noSnapshot)
            let report =
                attempts > 1
                ? try await synchronizer.sync(retrying: RetryPolicy(maxAttempts: attempts)) : try await synchronizer.sync()
            if options.json {
                JSONOutput.print(SyncReportJSON(report))
            } else {
                for line in Output.lines(for: report) { say(line) }
            }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stay live until interrupted (Ctrl-C): colleagues' changes applied as the server pushes them, local ones sent at once.",
        discussion:
            "Keeps the server's event stream open (GET /events) and prints each change as it is applied. Reconnects by itself after failures; `revsync status` in another terminal shows the state."
    )

    @OptionGroup var options: StoreOptions

    @Option(help: "Seconds between looks for change sets other processes queued in the store.")
    var interval: Double = 1

    func run() async throws {
        try await reportingErrors {
            guard interval > 0 else { throw CommandFailure("--interval must be more than 0") }
            let store = try await options.open()
            let synchronizer = makeSynchronizer(store)
            let server = try await store.server()?.url.absoluteString ?? "no server"
            var liveOptions = LiveOptions()
            liveOptions.outboxPollInterval = .milliseconds(Int64(interval * 1000))
            let events = synchronizer.events()
            let live = Task { try await synchronizer.live(liveOptions) }
            let stop = InterruptFlag { live.cancel() }
            let json = options.json
            let printer = Task {
                var shown = StateLine()
                for await event in events {
                    if case .statusChanged(let status) = event {
                        // One line per change of state, not one per reconnection attempt.
                        guard shown.changes(to: status) else { continue }
                    }
                    Self.show(event, json: json)
                }
            }
            if !options.json {
                say("Watching \(options.store): live with \(server); Ctrl-C stops.")
            }
            defer { printer.cancel() }
            do {
                try await live.value
            } catch is CancellationError {}
            _ = stop
            // Ctrl-C ends it: say so, and where the store stands.
            let status = try await store.status()
            if json {
                say(#"{"stopped":true,"maxRevision":\#(status.maxRevision),"pendingChangeSets":\#(status.pendingChangeSets)}"#)
            } else {
                say(
                    "Stopped watching \(options.store) at revision \(status.maxRevision); \(counted(status.pendingChangeSets, "change set")) waiting to be sent."
                )
            }
        }
    }

    /// One event as it happens: syncs and pushed change sets with each change, state changes,
    /// failures (on standard error).
    static func show(_ event: SyncEvent, json: Bool) {
        switch event {
        case .finished(let report) where report.sent > 0 || report.received > 0:
            if json { return JSONOutput.print(SyncReportJSON(report)) }
            Output.lines(for: report).forEach(say)
            changeLines(report).forEach(say)
        case .received(let report):
            if json { return JSONOutput.print(SyncReportJSON(report)) }
            say("Received \(counted(report.received, "change set")); now at revision \(report.maxRevision).")
            changeLines(report).forEach(say)
        case .statusChanged(let status) where !json:
            let reason = status.lastError.map { " \(TerminalText.escaped($0))" } ?? ""
            say(
                "[\(status.state.rawValue)]\(status.state == .offline ? reason + "; reconnecting by itself, less often the longer it lasts" : "")"
            )
        case .failed(let failure, let retryIn):
            let retry =
                retryIn.map {
                    String(format: "; again in %.1f s", Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)
                } ?? ""
            FileHandle.standardError.write(Data("revsync: sync failed: \(failure)\(retry)\n".utf8))
        default:
            break
        }
    }

    /// `  revision 12: teams 1 updated`, for each record the server's data changed.
    static func changeLines(_ report: SyncReport) -> [String] {
        report.changes.map { change in
            let verb =
                switch change.operation {
                case .create: "created"
                case .update: "updated"
                case .delete: "deleted"
                }
            return "  revision \(change.revision.map(String.init) ?? "?"): \(change.record.entity) \(change.record.id) \(verb)"
        }
    }
}

/// Which changes of state `watch` prints: `connecting` once at the start, `live`, and
/// `offline` once per outage (the reconnection attempts in between, each a `connecting` and an
/// `offline` again, are not news); never `syncing`.
struct StateLine {
    private var last: SyncStatus.State?

    mutating func changes(to status: SyncStatus) -> Bool {
        let state = status.state
        switch (last, state) {
        case (_, .syncing): return false
        case (let last?, _) where last == state: return false
        case (.offline?, .connecting): return false
        default:
            last = state
            return true
        }
    }
}

/// The synchronizer of the commands. `REVSYNC_CRASH_AT` (`response-received`,
/// `before-revision` or `repair-received`) kills the process at that step: a fault-injection
/// hook for the crash tests, which prove that nothing is lost or doubled.
func makeSynchronizer(_ store: LocalStore, startFromSnapshot: Bool = true) -> Synchronizer {
    let crashAt = ProcessInfo.processInfo.environment["REVSYNC_CRASH_AT"]
    var configuration = Synchronizer.Configuration()
    configuration.startFromSnapshot = startFromSnapshot
    return Synchronizer(
        store: store, configuration: configuration,
        stageHook: { stage in
            switch (stage, crashAt) {
            case (.responseReceived, "response-received"), (.appliedBeforeRevision, "before-revision"),
                (.repairReceived, "repair-received"):
                kill(getpid(), SIGKILL)
            default:
                break
            }
        })
}

/// Calls `onInterrupt` on SIGINT or SIGTERM, so that `watch` ends cleanly (the sync in
/// progress is applied or not at all).
final class InterruptFlag: Sendable {
    /// Kept so that the handlers stay installed.
    private let sources = Locked<[any DispatchSourceSignal]>([])

    init(onInterrupt: @escaping @Sendable () -> Void) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber)
            source.setEventHandler(handler: onInterrupt)
            source.resume()
            sources.withLock { $0.append(source) }
        }
    }
}
