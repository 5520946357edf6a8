public import ServiceLifecycle

/// Makes the latest schema version's snapshot ready when the server starts, in the background,
/// so that the first new device does not wait for its build (2.6 s at 100,000 records when it
/// was made on the first `GET /snapshot`).
///
/// An intact snapshot on disk that is recent enough (``SnapshotCache/interval``) is kept as it
/// is; otherwise one is made. A device that asks meanwhile waits for this build, not for one of
/// its own: the remainder of a build is always shorter than a full JSON sync of the same data
/// set (measured in `docs/benchmarks.md`: the device's full sync takes longer than the server's
/// whole build, at 100,000 and at a million records). An empty data set has nothing to make.
/// After an erasure, ``SnapshotCache/retire(before:)`` starts the next build the same way.
public struct SnapshotPreparation: Service {
    private let snapshots: SnapshotCache

    public init(snapshots: SnapshotCache) {
        self.snapshots = snapshots
    }

    public func run() async throws {
        let preparing = Task { await snapshots.prepare() }
        // A service that returned would end the server: it stays until the server shuts down.
        try? await gracefulShutdown()  // ends when the server shuts down or the task is cancelled: both mean stop
        preparing.cancel()
        await snapshots.stopBuilds()
    }
}
