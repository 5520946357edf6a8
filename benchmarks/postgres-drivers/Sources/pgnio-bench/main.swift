import Foundation
import PostgresNIO
import Logging

let port = Int(CommandLine.arguments[1].split(separator: "/")[0])!
let config = PostgresClient.Configuration(host: "127.0.0.1", port: port, username: "revsync", password: nil, database: "revsync", tls: .disable)
let client = PostgresClient(configuration: config)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { await client.run() }
    try await client.query("CREATE TABLE IF NOT EXISTS bench (id BIGINT PRIMARY KEY, revision BIGINT, name TEXT, value DOUBLE PRECISION)")
    try await client.query("TRUNCATE bench")
    // 1. Point selects, 10k.
    for i in 0..<1000 { try await client.query("INSERT INTO bench VALUES (\(i), 1, \("name \(i)"), \(Double(i)))") }
    var start = Date()
    for i in 0..<10_000 {
        let rows = try await client.query("SELECT id, revision, name, value FROM bench WHERE id = \(Int64(i % 1000))")
        for try await (id, rev, name, value) in rows.decode((Int64, Int64, String, Double).self) { _ = (id, rev, name, value) }
    }
    print("postgres-nio point select: \(String(format: "%.1f", Date().timeIntervalSince(start) / 10_000 * 1e6)) µs")
    // 2. A small transaction: lock, select, update, insert, commit.
    try await client.query("CREATE TABLE IF NOT EXISTS counter (id INT PRIMARY KEY, revision BIGINT)")
    try await client.query("INSERT INTO counter VALUES (1, 0) ON CONFLICT DO NOTHING")
    start = Date()
    for i in 0..<2_000 {
        try await client.withTransaction(logger: Logger(label: "x")) { connection in
            let rows = try await connection.query("SELECT revision FROM counter WHERE id = 1 FOR UPDATE", logger: Logger(label: "x"))
            var revision: Int64 = 0
            for try await r in rows.decode(Int64.self) { revision = r }
            try await connection.query("UPDATE bench SET revision = \(revision + 1) WHERE id = \(Int64(i % 1000))", logger: Logger(label: "x"))
            try await connection.query("UPDATE counter SET revision = \(revision + 1) WHERE id = 1", logger: Logger(label: "x"))
        }
    }
    print("postgres-nio transaction (lock, select, 2 updates): \(String(format: "%.1f", Date().timeIntervalSince(start) / 2_000 * 1e6)) µs")
    group.cancelAll()
}
