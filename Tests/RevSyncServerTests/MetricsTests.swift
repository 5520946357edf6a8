import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `GET /metrics`: the Prometheus text format, for the `--metrics-token` only.
@Suite struct MetricsTests {
    static let token = "metrics-token-for-tests-0123456789"

    /// The value of the sample `name` (with its labels as written), if present.
    static func sample(_ text: String, _ name: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    @Test func syncsCommitsRefusalsBytesAndTheFleet() async throws {
        try await withLiveServer(configure: { $0.metricsToken = Self.token }) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, _) = try await alice.create("teams", ["name": "U10"])
            try await alice.create("teams", ["name": "U12"])
            try await bob.sync()
            let refused = try await bob.sync([ChangeSet.new().updating("teams", team, base: 0, ["name": "U10 Lions"])])
            #expect(refused.conflicts.count == 1)
            let broken = try await bob.post("{")
            #expect(broken.status == 400)

            let response = try await server.send("GET", "/metrics", headers: [("Authorization", "Bearer \(Self.token)")])
            #expect(response.status == 200)
            #expect(response.header("content-type")?.hasPrefix("text/plain") == true)
            let text = response.bodyText
            #expect(Self.sample(text, #"revsync_syncs_total{outcome="ok"}"#) == 4)
            #expect(Self.sample(text, #"revsync_syncs_total{outcome="rejected"}"#) == 1)
            #expect(Self.sample(text, "revsync_sync_duration_seconds_count") == 5)
            #expect(text.contains(#"revsync_sync_duration_seconds_bucket{le="+Inf"} 5"#))
            #expect(Self.sample(text, "revsync_change_sets_committed_total") == 2)
            #expect(Self.sample(text, #"revsync_change_sets_refused_total{reason="stale_revision"}"#) == 1)
            #expect((Self.sample(text, "revsync_bytes_received_total") ?? 0) > 0)
            #expect((Self.sample(text, "revsync_bytes_sent_total") ?? 0) > 0)
            #expect(Self.sample(text, "revsync_revision") == 2)
            #expect(Self.sample(text, "revsync_live_streams") == 0)
            #expect(Self.sample(text, #"revsync_devices{currency="current"}"#) == 2)
            #expect(Self.sample(text, #"revsync_devices{currency="silent"}"#) == 0)
            #expect(!text.contains("revsync_snapshot_age_seconds "))
            #expect(text.contains("# TYPE revsync_syncs_total counter"))

            _ = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(alice.token)")])
            let after = try await server.send("GET", "/metrics", headers: [("Authorization", "Bearer \(Self.token)")]).bodyText
            #expect((Self.sample(after, "revsync_snapshot_age_seconds") ?? -1) >= 0)
        }
    }

    @Test func onlyForTheMetricsToken() async throws {
        try await withLiveServer(configure: { $0.metricsToken = Self.token }) { server in
            let admin = try await server.device("admin", role: .admin)
            #expect(try await server.send("GET", "/metrics").status == 401)
            #expect(try await server.send("GET", "/metrics", headers: [("Authorization", "Bearer \(admin.token)")]).status == 401)
            #expect(try await server.send("GET", "/metrics", headers: [("Authorization", "Bearer wrong")]).status == 401)
            #expect(!server.logs.all.contains { $0.text.contains(Self.token) })
            #expect(server.logs.all.contains { $0.message == "authentication failed" && $0.metadata["path"] == "/metrics" })
        }
        // Not served without --metrics-token.
        let status = try await withLiveServer { server in
            try await server.send("GET", "/metrics", headers: [("Authorization", "Bearer \(Self.token)")]).status
        }
        #expect(status == 404)
    }
}
