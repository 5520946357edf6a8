public import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a wipe removed from a device, and whether the server has its receipt.
public struct WipeReport: Sendable, Hashable, Codable {
    /// Why the store wiped itself.
    public enum Reason: String, Sendable, Hashable, Codable {
        /// An operator revoked the device's token with a wipe order (`410 device_wiped`).
        case ordered
        /// The store had not reached the server for longer than its offline lease.
        case leaseExpired
    }

    /// Why: the server's order, or the offline lease.
    public var reason: Reason
    /// When, by the device's clock.
    public var wipedAt: Date
    /// The records the store held.
    public var records: Int
    /// The change sets it had not sent: discarded, never to reach the server.
    public var unsyncedChangeSets: Int
    /// The attachment files it held.
    public var attachments: Int
    /// Whether the server has the receipt (`POST /wipe-receipt`); until then the store's path
    /// keeps only what sending it takes (no data: the server's address and the revoked token).
    public var receiptSent: Bool
}

/// Wiping a store: everything RevSync keeps for it goes, and no byte of its data stays in any
/// file it wrote. Protocol section 16.
extension LocalStore {
    /// The file that says a store was wiped (`<store>.wiped`): the report, and until the server
    /// has the receipt, its address and the (revoked) token to send it with. No data.
    static func wipeMarkerPath(_ path: String) -> String { path + ".wiped" }

    private struct WipeMarker: Codable {
        var report: WipeReport
        var server: URL?
        var token: String?
    }

    /// Wipes the store: counts what it holds, overwrites every record, the outbox, the refusal
    /// journal and the server's address and token in place (`secure_delete`, then a truncating
    /// checkpoint), closes the database, and overwrites with zeros and deletes every file RevSync
    /// keeps for it (the store, its `-wal` and `-shm`, the attachment files and partial
    /// downloads, a snapshot download); then leaves the wipe's report at `<store>.wiped`. The
    /// store cannot be used afterwards: ``open(at:)`` on its path throws `wiped`.
    ///
    /// Called by ``Synchronizer`` when the server answers `410 device_wiped`, and by the offline
    /// lease; an app may call it itself (a sign-out that must leave nothing behind).
    @discardableResult
    public func wipe(reason: WipeReport.Reason = .ordered) async throws -> WipeReport {
        try wipeNow(reason: reason)
    }

    /// The same, from synchronous code (the offline lease, at open).
    func wipeNow(reason: WipeReport.Reason) throws -> WipeReport {
        let schema = self.schema
        let (records, unsynced, server) = try pool.read { db in
            let records = try schema.entities.reduce(0) {
                $0 + (try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQLIdentifier.quoted($1.name))") ?? 0)
            }
            let state = StoreState(db: db)
            let server = try state.string(.serverURL).flatMap(URL.init(string:)).flatMap { url in
                try state.string(.token).map { LocalStore.ServerConnection(url: url, token: $0) }
            }
            return (records, try Outbox(db: db).count(), server)
        }
        let attachmentFiles =
            (try? FileManager.default.contentsOfDirectory(atPath: attachments.directory))?.filter { $0 != "partial" }.count ?? 0
        // In place first: whatever else holds the file open reads zeros from here on, and the
        // app's observations show the store empty. Without triggers (RevSync's own, which the
        // store no longer needs) or foreign keys, a table nobody observes is emptied whole
        // (SQLite's truncate optimization, its pages zeroed) rather than row by row: a million
        // records in 0.2 s rather than 7 s.
        try? pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try self.capture.suspended {
                try db.inTransaction {
                    for schema in ["main", "temp"] {
                        for trigger in try String.fetchAll(db, sql: "SELECT name FROM \(schema).sqlite_master WHERE type = 'trigger'") {
                            try db.execute(sql: "DROP TRIGGER \(schema).\(SQLIdentifier.quoted(trigger))")
                        }
                    }
                    for table in try Self.tables(db) { try db.execute(sql: "DELETE FROM \(SQLIdentifier.quoted(table))") }
                    return .commit
                }
            }
        }
        endObservations()
        try? pool.writeWithoutTransaction { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try? pool.close()
        let report = WipeReport(
            reason: reason, wipedAt: Date(), records: records, unsyncedChangeSets: unsynced, attachments: attachmentFiles,
            receiptSent: false)
        try Self.shredFiles(of: path)
        try Self.writeMarker(WipeMarker(report: report, server: server?.url, token: server?.token), at: path)
        return report
    }

    /// Ends every observation of the store: each fetches once more and ends with `wiped`; one
    /// whose value the emptying did not change and that drops repeated values
    /// (`removeDuplicates()`) ends when the tables are dropped, with SQLite's error.
    private func endObservations() {
        wipeBegun.withLock { $0 = true }
        try? pool.writeWithoutTransaction { db in
            try self.capture.suspended {
                try db.inTransaction {
                    try db.notifyChanges(in: .fullDatabase)
                    return .commit
                }
                try db.inTransaction {
                    try db.notifyChanges(in: .fullDatabase)
                    for table in try Self.tables(db) { try db.execute(sql: "DROP TABLE \(SQLIdentifier.quoted(table))") }
                    return .commit
                }
            }
        }
    }

    private static func tables(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    }

    /// The report of the wipe of the store at `path`, if it was wiped.
    public static func wipeReport(at path: String) -> WipeReport? {
        readMarker(at: path)?.report
    }

    /// Sends the server the receipt of the wipe of the store at `path`, if it was not sent yet
    /// (the wipe happened offline, or the network failed right after it); returns the report as
    /// it now stands, `nil` when the store was not wiped. Once the server has the receipt, the
    /// token is forgotten.
    ///
    /// - Throws: ``SyncFailure`` when the server cannot be reached or refuses the receipt.
    @discardableResult
    public static func sendWipeReceipt(at path: String, transport: any SyncTransport = DefaultTransport()) async throws -> WipeReport? {
        guard var marker = readMarker(at: path) else { return nil }
        guard !marker.report.receiptSent, let url = marker.server, let token = marker.token else { return marker.report }
        var call = ServerCall("POST", "wipe-receipt", on: url, token: token)
        let receipt = AdminAPI.WipeReceipt(
            records: Int64(marker.report.records), unsyncedChangeSets: Int64(marker.report.unsyncedChangeSets),
            attachments: Int64(marker.report.attachments), reason: marker.report.reason.rawValue)
        call.json(Array(try JSONEncoder().encode(receipt)), gzipLevel: 1)
        _ = try await call.body(with: transport, limit: 1 << 16)
        marker.report.receiptSent = true
        marker.token = nil
        try writeMarker(marker, at: path)
        return marker.report
    }

    private static func readMarker(at path: String) -> WipeMarker? {
        guard let data = FileManager.default.contents(atPath: wipeMarkerPath(path)) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(WipeMarker.self, from: data)
    }

    private static func writeMarker(_ marker: WipeMarker, at path: String) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try PrivateFiles.write(try encoder.encode(marker), to: wipeMarkerPath(path))
    }

    /// Every file RevSync keeps for the store at `path`, overwritten with zeros, synced, and
    /// deleted: the store, its `-wal`, `-shm` and `-journal`, the attachments folder (with
    /// partial downloads), a snapshot download and its state, and candidates of a start from a
    /// snapshot.
    static func shredFiles(of path: String) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let name = url.lastPathComponent
        let kept = ["", "-wal", "-shm", "-journal", "-attachments", ".snapshot.gz", ".snapshot.gz.json"].map { name + $0 }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where kept.contains(entry) || entry.hasPrefix(name + ".bootstrap-") {
            try shred(directory + "/" + entry)
        }
    }

    /// Overwrites `path` with zeros and deletes it; a folder, everything in it first.
    private static func shred(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { try shred(path + "/" + entry) }
            try FileManager.default.removeItem(atPath: path)
            return
        }
        if (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0 {
            let descriptor = systemOpen(path, O_WRONLY)
            if descriptor >= 0 {
                defer { systemClose(descriptor) }
                let zeros = [UInt8](repeating: 0, count: 1 << 20)
                var left = Int(info.st_size)
                while left > 0 {
                    let written = zeros.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, min(left, $0.count)) }
                    guard written > 0 else { break }
                    left -= written
                }
                fsync(descriptor)
            }
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw LocalStoreError(.wiped, "cannot delete \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// The system's `open` and `close` (``LocalStore`` has methods of those names).
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags)
    #else
    Darwin.open(path, flags)
    #endif
}

@discardableResult
private func systemClose(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}

// MARK: The offline lease

/// What a sync answer says of the offline lease: the lease (days; `nil`: none) and the server's
/// clock. Kept in the answer's own transaction, beside the device's clock when it came.
struct ServerContact: Sendable {
    var leaseDays: Int?
    var serverTime: Int64?

    init(leaseDays: Int? = nil, serverTime: Int64? = nil) {
        self.leaseDays = leaseDays
        self.serverTime = serverTime
    }

    /// From a sync answer's headers (`RevSync-Max-Offline-Days`, `RevSync-Server-Time`).
    init(headers: [String: String]) {
        self.init(
            leaseDays: headers[RevSyncHeader.key(RevSyncHeader.maxOfflineDays)].flatMap { Int($0) },
            serverTime: headers[RevSyncHeader.key(RevSyncHeader.serverTime)].flatMap { Int64($0) })
    }

    func record(in state: StoreState, at now: Date = Date()) throws {
        try state.set(.leaseDays, leaseDays.map(String.init))
        try state.set(.lastServerAnswer, String(Int64(now.timeIntervalSince1970)))
        if let serverTime { try state.set(.lastServerTime, String(serverTime)) }
    }
}

/// The offline lease (the schema's `maxOfflineDays`, or `revsync-server serve
/// --max-offline-days N`): a store that has not heard from the server for longer than the lease
/// the server last set wipes itself when it opens.
extension LocalStore {
    /// The server was heard from (a live push): the lease counts from now. Written at most once
    /// an hour: a lease is days.
    func recordServerHeard(at now: Date = Date()) async {
        let due = lastHeardRecorded.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= 3600 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        _ = try? await ownWrite { db in try StoreState(db: db).set(.lastServerAnswer, String(Int64(now.timeIntervalSince1970))) }
    }

    /// Whether the lease ran out by `now`: more than its days since the server last answered,
    /// by the device's clock; or the device's clock reads more than a day before the server's
    /// clock at that answer (set back: it cannot extend the lease past when it was set back
    /// from, and a clock before the last answer is not trusted at all).
    static func leaseExpired(leaseDays: Int?, lastAnswer: Int64?, serverTime: Int64?, now: Date) -> Bool {
        guard let leaseDays, leaseDays > 0, let lastAnswer else { return false }
        let clock = Int64(now.timeIntervalSince1970)
        if let serverTime, clock < serverTime - 86_400 { return true }
        return clock - lastAnswer > Int64(leaseDays) * 86_400
    }

    /// At open: a store past its lease wipes itself (the receipt waits for the server).
    func wipeIfLeaseExpired(now: Date = Date()) throws {
        let (days, answer, serverTime) = try pool.read { db in
            let state = StoreState(db: db)
            return (
                try state.string(.leaseDays).flatMap { Int($0) }, try state.string(.lastServerAnswer).flatMap { Int64($0) },
                try state.string(.lastServerTime).flatMap { Int64($0) }
            )
        }
        guard Self.leaseExpired(leaseDays: days, lastAnswer: answer, serverTime: serverTime, now: now) else { return }
        let report = try wipeNow(reason: .leaseExpired)
        throw LocalStoreError(.wiped, WipedStore.description(report, at: path))
    }
}

extension LocalStoreError.Code {
    /// The store was wiped (by the server's order or its offline lease): nothing of it is left
    /// but the wipe's report (``LocalStore/wipeReport(at:)``).
    public static let wiped = LocalStoreError.Code(rawValue: "wiped")
}

extension LocalStoreError {
    /// How an observation of a store ends when the store is wiped.
    static func wipedObservation(at path: String) -> LocalStoreError {
        LocalStoreError(.wiped, "the store at \(path) was wiped: nothing of it is left to observe")
    }
}
