#if canImport(SwiftUI)
public import SwiftUI
import RevSyncClient

/// The roster screen: generated records observed through ``RosterModel``, a badge on each
/// player whose edit waits to be sent or was refused, and a live connection that follows the
/// scene's phase (``SyncCoordinator``).
///
/// SwiftUI is on Apple platforms only: this file compiles there (Xcode, `swift build` on a Mac);
/// on Linux, where CI runs, it is left out, and the model, the coordinator and the store it
/// shows are tested without it.
public struct RosterView: View {
    @State private var model: RosterModel
    private let coordinator: SyncCoordinator?
    @Environment(\.scenePhase) private var scenePhase

    /// The screen over `store`; `coordinator` is `nil` in previews (no server).
    public init(store: LocalStore, coordinator: SyncCoordinator?) {
        _model = State(initialValue: RosterModel(store: store))
        self.coordinator = coordinator
    }

    public var body: some View {
        NavigationStack {
            List(model.lines) { line in
                HStack {
                    Text(line.teamPlayer.jerseyNumber.map { "#\($0)" } ?? "–").monospacedDigit().frame(width: 40, alignment: .leading)
                    VStack(alignment: .leading) {
                        Text("\(line.player.firstName) \(line.player.lastName)")
                        Text("\(line.player.position ?? "No position") · \(line.team.name)").font(.caption).foregroundStyle(.secondary)
                    }
                    Spacer()
                    if line.syncState?.refused == true {
                        Label("Refused", systemImage: "exclamationmark.triangle").foregroundStyle(.red)
                    } else if line.syncState?.isPending == true {
                        Label("Waiting to sync", systemImage: "arrow.triangle.2.circlepath").foregroundStyle(.orange)
                    }
                }
            }
            .navigationTitle("Roster")
            .overlay {
                if let failure = model.failure {
                    ContentUnavailableView("Cannot read the roster", systemImage: "xmark.octagon", description: Text(failure))
                }
            }
        }
        .task { await model.observe() }
        .task(id: scenePhase) {
            let phase: SyncCoordinator.Phase =
                switch scenePhase {
                case .active: .active
                case .background: .background
                default: .inactive
                }
            await coordinator?.sceneChanged(to: phase)
        }
    }
}

#Preview("A roster, no server") {
    RosterView(store: try! ClubDatabase.preview(), coordinator: nil)
}
#endif
