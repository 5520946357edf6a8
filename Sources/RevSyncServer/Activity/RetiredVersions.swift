public import RevSyncEngine
import RevSyncProtocol

/// Devices whose app still speaks a schema version the data set no longer serves (older than
/// the schema's `minimumVersion`): raising the minimum while they sync strands their queued
/// change sets until their app is updated. The server says so when it starts; the console's
/// overview and `GET /admin/api/overview` (`schemaVersions.retired`) list them.
public enum RetiredVersions {
    /// The server's warning at start, or `nil` when no device speaks a retired version.
    public static func warning(engine: SyncEngine) async throws -> String? {
        let minimum = engine.lineage.minimumVersion
        let report = try await FleetReport.load(from: engine.storage, schema: engine.schema)
        let retired = report.devicesOnRetiredVersions(minimum: minimum)
        guard !retired.isEmpty else { return nil }
        let shown = retired.prefix(20).map { "\($0.device.name) (v\($0.activity?.schemaVersion ?? 0))" }.joined(separator: ", ")
        let more = retired.count > 20 ? " and \(retired.count - 20) more" : ""
        return "\(retired.count) device\(retired.count == 1 ? "" : "s") last spoke a schema version older than minimumVersion \(minimum) "
            + "and will be refused (426 upgrade_required) until \(retired.count == 1 ? "its" : "their") app is updated, their queued change "
            + "sets waiting: \(shown)\(more). Lower minimumVersion to let them sync, or update their apps (docs/schema.md)."
    }
}
