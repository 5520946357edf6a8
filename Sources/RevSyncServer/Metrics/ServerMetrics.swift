import CoreMetrics
import Foundation
import Prometheus
import RevSyncEngine
import RevSyncProtocol

/// The server's metrics for Prometheus (`GET /metrics`, with `--metrics-token`): swift-metrics
/// counters, timers and gauges made by swift-prometheus's factory on a registry of this
/// server's own (never the process-wide metrics system, so that servers in one process keep
/// theirs apart), rendered in the Prometheus text format by the registry.
///
/// Counted as requests end: `revsync_syncs_total{outcome}` (`ok`, `rejected`: a 4xx for the
/// whole request, `error`: a 5xx), `revsync_sync_duration_seconds` (a histogram),
/// `revsync_change_sets_committed_total`, `revsync_change_sets_refused_total{reason}`,
/// `revsync_bytes_received_total` and `revsync_bytes_sent_total` (every request). Read when
/// scraped: `revsync_revision`, `revsync_live_streams`, `revsync_devices{currency}`
/// (``FleetReport/Currency``, revoked tokens left out) and `revsync_snapshot_age_seconds`
/// (absent before the first snapshot).
final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let syncDuration: CoreMetrics.Timer
    private let committed: CoreMetrics.Counter
    private let bytesReceived: CoreMetrics.Counter
    private let bytesSent: CoreMetrics.Counter
    /// `revsync_syncs_total` by outcome, made once (a sync only increments).
    private let syncsOK: CoreMetrics.Counter
    private let syncsRejected: CoreMetrics.Counter
    private let syncsFailed: CoreMetrics.Counter
    private let revision: CoreMetrics.Gauge
    private let liveStreams: CoreMetrics.Gauge

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["revsync_sync_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        self.factory = factory
        syncDuration = CoreMetrics.Timer(label: "revsync_sync_duration_seconds", factory: factory)
        committed = CoreMetrics.Counter(label: "revsync_change_sets_committed_total", factory: factory)
        bytesReceived = CoreMetrics.Counter(label: "revsync_bytes_received_total", factory: factory)
        bytesSent = CoreMetrics.Counter(label: "revsync_bytes_sent_total", factory: factory)
        func syncs(_ outcome: String) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: "revsync_syncs_total", dimensions: [("outcome", outcome)], factory: factory)
        }
        syncsOK = syncs("ok")
        syncsRejected = syncs("rejected")
        syncsFailed = syncs("error")
        revision = CoreMetrics.Gauge(label: "revsync_revision", factory: factory)
        liveStreams = CoreMetrics.Gauge(label: "revsync_live_streams", factory: factory)
    }

    /// A request ended with `status`, having received and sent these bytes.
    func requestEnded(bytesIn: Int, bytesOut: Int) {
        if bytesIn > 0 { bytesReceived.increment(by: Int64(bytesIn)) }
        if bytesOut > 0 { bytesSent.increment(by: Int64(bytesOut)) }
    }

    /// A `POST /sync` ended with `status` after `duration`.
    func syncEnded(status: Int, duration: Duration, committed count: Int, refusals: [Refusal]) {
        (status < 400 ? syncsOK : status < 500 ? syncsRejected : syncsFailed).increment()
        syncDuration.recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
        if count > 0 { committed.increment(by: Int64(count)) }
        for refusal in refusals {
            CoreMetrics.Counter(
                label: "revsync_change_sets_refused_total", dimensions: [("reason", refusal.reason.rawValue)], factory: factory
            )
            .increment()
        }
    }

    /// The text format, with the gauges read now.
    func render(report: FleetReport, streams: Int, snapshotCreated: Date?) -> [UInt8] {
        revision.record(Double(report.maxRevision))
        liveStreams.record(Double(streams))
        for currency in FleetReport.Currency.allCases {
            let count = report.activeRows.filter { $0.currency == currency }.count
            CoreMetrics.Gauge(label: "revsync_devices", dimensions: [("currency", currency.rawValue)], factory: factory).record(
                Double(count))
        }
        if let snapshotCreated {
            // Made with the first snapshot: absent before, rather than a misleading 0.
            CoreMetrics.Gauge(label: "revsync_snapshot_age_seconds", factory: factory)
                .record(max(0, Date().timeIntervalSince(snapshotCreated)))
        }
        return registry.emitToBuffer()
    }
}
