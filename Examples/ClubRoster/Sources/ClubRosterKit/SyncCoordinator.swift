public import RevSyncClient

/// When the app talks to the server, around the scene's phase: live (pushed changes applied as
/// they are committed, local writes sent at once) while the app is in front; when it goes to
/// the background, the live connection ends and one last sync sends what the user just wrote,
/// inside the few seconds the system grants. Nothing is lost either way: a write is in the
/// store's outbox the moment its transaction commits, and the next sync sends it.
@MainActor
public final class SyncCoordinator {
    /// The scene's phase, as SwiftUI's `ScenePhase` has it.
    public enum Phase: Sendable {
        /// In front, taking input.
        case active
        /// Visible but not taking input (a call, the app switcher).
        case inactive
        /// Not visible.
        case background
    }

    private let synchronizer: Synchronizer
    private var live: Task<Void, any Error>?

    public init(synchronizer: Synchronizer) {
        self.synchronizer = synchronizer
    }

    /// Whether the live connection is open.
    public var isLive: Bool { live != nil }

    /// The wipe, when the server orders it while the app runs: the store has removed everything,
    /// the token goes from `tokens`, and `wiped` is told (show the wiped screen instead of the roster).
    public func watchWipes(tokens: any TokenStore, wiped: @escaping @MainActor (WipeReport) -> Void) async {
        for await report in synchronizer.wipes() {
            live?.cancel()
            live = nil
            // The Keychain item: nothing of the device's access is left. A failure to remove it
            // leaves a revoked token, which reads nothing.
            try? tokens.remove()
            wiped(report)
        }
    }

    /// Follows the scene's phase (`.onChange(of: scenePhase)`).
    public func sceneChanged(to phase: Phase) async {
        switch phase {
        case .active:
            guard live == nil else { return }
            let synchronizer = synchronizer
            // Reconnects by itself after network failures, less often the longer they last.
            live = Task { try await synchronizer.live() }
        case .inactive:
            break
        case .background:
            live?.cancel()
            live = nil
            // One sync with what is queued; a failure is no loss (the outbox keeps it).
            _ = try? await synchronizer.sync()
        }
    }
}
