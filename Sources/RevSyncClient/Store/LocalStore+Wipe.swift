public import Foundation
import GRDB
public import RevSyncProtocol
import RevSyncSQLite

/// What a wipe removed from a device, and whether the server has its receipt.
public struct WipeReport: Sendable, Hashable, Codable {
    /// Why a store wipes itself.
    public typealias Reason = WipeReason

    /// What the store removed, and why: the receipt the server is sent (`POST /wipe-receipt`).
    public var receipt: WipeReceipt
    /// When, by the device's clock.
    public var wipedAt: Date
    /// Whether the server has the receipt; until then the store's path keeps only what sending it
    /// takes (no data: the server's address and the SHA-256 of the token).
    public var receiptSent: Bool

    /// A report of a wipe.
    public init(receipt: WipeReceipt, wipedAt: Date, receiptSent: Bool) {
        self.receipt = receipt
        self.wipedAt = wipedAt
        self.receiptSent = receiptSent
    }

    /// Why: the server's order, or the offline lease.
    public var reason: Reason { receipt.reason }
    /// The records the store held.
    public var records: Int { Int(receipt.records) }
    /// The change sets it had not sent: discarded, never to reach the server.
    public var unsyncedChangeSets: Int { Int(receipt.unsyncedChangeSets) }
    /// The attachment files it held.
    public var attachments: Int { Int(receipt.attachments) }

    // Kept flat (`reason`, `wipedAt`, `records`, `unsyncedChangeSets`, `attachments`,
    // `receiptSent`), as `STORE.wiped` has always held it.
    private enum CodingKeys: String, CodingKey { case reason, wipedAt, records, unsyncedChangeSets, attachments, receiptSent }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        receipt = WipeReceipt(
            records: try container.decode(Int64.self, forKey: .records),
            unsyncedChangeSets: try container.decode(Int64.self, forKey: .unsyncedChangeSets),
            attachments: try container.decode(Int64.self, forKey: .attachments),
            reason: try container.decode(WipeReason.self, forKey: .reason))
        wipedAt = try container.decode(Date.self, forKey: .wipedAt)
        receiptSent = try container.decode(Bool.self, forKey: .receiptSent)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(receipt.reason, forKey: .reason)
        try container.encode(wipedAt, forKey: .wipedAt)
        try container.encode(receipt.records, forKey: .records)
        try container.encode(receipt.unsyncedChangeSets, forKey: .unsyncedChangeSets)
        try container.encode(receipt.attachments, forKey: .attachments)
        try container.encode(receiptSent, forKey: .receiptSent)
    }
}

/// Wiping a store: everything RevSync keeps for it goes (``StoreFiles``), and no byte of its data
/// stays in any file it wrote. Protocol section 16.
extension LocalStore {
    /// `STORE.wiped`: the report, and until the server has the receipt, its address and the
    /// SHA-256 of the (revoked) token, which can send the receipt and nothing else. No data, and
    /// never the token itself.
    private struct WipeMarker: Codable {
        var report: WipeReport
        var server: URL?
        var tokenSHA256: String?
        /// What a store wiped by RevSync 0.12 kept instead (read, then forgotten).
        var token: String?
    }

    /// Wipes the store: counts what it holds, overwrites every record, the outbox, the refusal
    /// journal and the server's address and token in place (`secure_delete`, then a truncating
    /// checkpoint), closes the database, and overwrites with zeros and deletes every file RevSync
    /// keeps for it (the store, its `-wal`, `-shm` and `-journal`, the files a
    /// symbolic link at its path points to, the attachment files and partial downloads, a
    /// snapshot download, start-up candidates); then leaves the wipe's report at `STORE.wiped`. The
    /// store cannot be used afterwards: ``open(at:)`` on its path throws `wiped`, and
    /// ``wipes()`` tells every listener.
    ///
    /// Called by ``Synchronizer`` when the server answers `410 device_wiped`, and by the offline
    /// lease; an app may call it itself (a sign-out that must leave nothing behind).
    @discardableResult
    public func wipe(reason: WipeReport.Reason = .ordered) async throws -> WipeReport {
        try wipeNow(reason: reason, server: nil)
    }

    /// The same, from synchronous code; `server` is the connection the app syncs with when the
    /// store does not keep its token (``Synchronizer/init(store:server:transport:configuration:sleep:)``).
    /// With `announce` `false` the caller tells ``wipes()`` itself (once it tried to send the
    /// receipt, so that listeners hear whether the server has it).
    func wipeNow(reason: WipeReport.Reason, server given: ServerConnection?, announce: Bool = true) throws -> WipeReport {
        let schema = self.schema
        let (records, unsynced, kept) = try pool.read { db in
            let records = try schema.entities.reduce(0) {
                $0 + (try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQLIdentifier.quoted($1.name))") ?? 0)
            }
            let state = StoreState(db: db)
            let url = try state.string(.serverURL).flatMap(URL.init(string:))
            return (records, try Outbox(db: db).count(), (url, try state.string(.token)))
        }
        // For the receipt only: a folder that cannot be listed counts none (shredding it below reports nothing lost).
        let attachmentFiles =
            ((try? FileManager.default.contentsOfDirectory(atPath: files.attachments)) ?? []).filter { $0 != "partial" }.count
        // In place first: whatever else holds the file open reads zeros from here on, and the
        // app's observations show the store empty. Without triggers (RevSync's own, which the
        // store no longer needs) or foreign keys, a table nobody observes is emptied whole
        // (SQLite's truncate optimization, its pages zeroed) rather than row by row: a million
        // records in 0.2 s rather than 7 s.
        // Best effort: a store that cannot be emptied in place (a broken disk) is shredded below all the same.
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
        // Best effort, like the emptying: the files are overwritten whole next.
        _ = try? pool.writeWithoutTransaction { db in try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        // A close that fails leaves connections SQLite frees with the process; the files go now.
        try? pool.close()
        let receipt = WipeReceipt(
            records: Int64(records), unsyncedChangeSets: Int64(unsynced), attachments: Int64(attachmentFiles), reason: reason)
        let report = WipeReport(receipt: receipt, wipedAt: Date(), receiptSent: false)
        try files.shred()
        let url = given?.url ?? kept.0
        let token = given?.token ?? kept.1
        try Self.writeMarker(WipeMarker(report: report, server: url, tokenSHA256: token.map(TokenHash.sha256)), at: path)
        if announce { wipeBroadcaster.emit(report) }
        return report
    }

    /// Ends every observation of the store: each fetches once more and ends with `wiped`; one
    /// whose value the emptying did not change and that drops repeated values
    /// (`removeDuplicates()`) ends when the tables are dropped, with SQLite's error.
    private func endObservations() {
        wipeBegun.withLock { $0 = true }
        // Best effort: a store whose tables cannot be dropped is shredded anyway; its
        // observations then end with SQLite's error for the closed database.
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

    /// The wipes of this store from now on (the newest is kept for a listener that comes
    /// later): by the server's order (a sync, a live stream, an attachment's download answered
    /// `410 device_wiped`) or by the app (``wipe(reason:)``). The app removes what it keeps itself
    /// (the token in the Keychain) and shows a screen. A store past its offline lease wipes itself
    /// as it opens: ``open(at:)`` throws `wiped` then, and there is no store to listen to.
    public nonisolated func wipes() -> AsyncStream<WipeReport> {
        wipeBroadcaster.stream()
    }

    /// The report of the wipe of the store at `path`, if it was wiped.
    public static func wipeReport(at path: String) -> WipeReport? {
        readMarker(at: path)?.report
    }

    /// Sends the server the receipt of the wipe of the store at `path`, if it was not sent yet
    /// (the wipe happened offline, or the network failed right after it); returns the report as
    /// it now stands, `nil` when the store was not wiped. Once the server has the receipt, what
    /// sent it is forgotten.
    ///
    /// - Parameters:
    ///   - path: the wiped store's path.
    ///   - server: the server and token, for an app that keeps its token out of the store (the
    ///     Keychain): the store's path then keeps the token's SHA-256 and the address, so that a
    ///     later call can send the receipt without it, and the app may remove its token at once.
    ///   - transport: how the request travels.
    /// - Throws: ``SyncFailure`` when the server cannot be reached or refuses the receipt, or
    ///   `notConfigured` when neither the store nor `server` says where to send it.
    @discardableResult
    public static func sendWipeReceipt(
        at path: String, server: ServerConnection? = nil, transport: any SyncTransport = DefaultTransport()
    ) async throws -> WipeReport? {
        guard var marker = readMarker(at: path) else { return nil }
        guard !marker.report.receiptSent else { return marker.report }
        if marker.tokenSHA256 == nil || marker.server == nil, let server {
            marker.server = server.url
            marker.tokenSHA256 = TokenHash.sha256(server.token)
            try writeMarker(marker, at: path)
        }
        guard let url = marker.server, let key = marker.tokenSHA256 else { throw SyncFailure.notConfigured }
        var call = ServerCall("POST", "wipe-receipt", on: url)
        call[header: RevSyncHeader.tokenSHA256] = key
        call.json(Array(try JSONEncoder().encode(marker.report.receipt)), gzipLevel: 1)
        _ = try await call.body(with: transport, limit: 1 << 16)
        marker.report.receiptSent = true
        marker.tokenSHA256 = nil
        try writeMarker(marker, at: path)
        return marker.report
    }

    /// Sets a wiped device up again, in one step before the new store is created: sends a receipt
    /// still waiting (with what the store's path keeps, or `server`), then removes the wipe's
    /// report, so that a store can be created at `path` again, with a new token (the old one is
    /// revoked: the server refuses it). Nothing of the old store is left.
    ///
    /// - Throws: ``SyncFailure`` when the receipt cannot reach the server yet (the report stays:
    ///   connect, and call again); nothing when `path` was not wiped.
    public static func clearWipe(
        at path: String, server: ServerConnection? = nil, transport: any SyncTransport = DefaultTransport()
    ) async throws {
        guard readMarker(at: path) != nil else { return }
        do {
            try await sendWipeReceipt(at: path, server: server, transport: transport)
        } catch let failure as SyncFailure where failure.status == 401 || failure.code == .notConfigured {
            // The server knows no such token (or the store never knew its server): there is no
            // receipt to send, and nothing for the old token to read.
        }
        let marker = StoreFiles(path).wipeReport
        guard unlink(marker) == 0 || errno == ENOENT else {
            throw LocalStoreError(.wiped, "cannot remove \(marker): \(String(cString: strerror(errno)))")
        }
    }

    /// Refuses to write anything at a path marked wiped: set the device up again first
    /// (``clearWipe(at:server:transport:)``).
    static func refuseIfWiped(_ path: String) throws {
        guard let report = wipeReport(at: path) else { return }
        throw LocalStoreError(
            .wiped,
            WipedStore.description(report, at: path)
                + "; nothing is written there until the device is set up again (LocalStore.clearWipe, or revsync init with a new token)"
        )
    }

    private static func readMarker(at path: String) -> WipeMarker? {
        let file = StoreFiles(path).wipeReport
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        // A report that does not read (a file edited by hand) still marks the path wiped.
        guard var marker = try? decoder.decode(WipeMarker.self, from: data) else {
            return WipeMarker(
                report: WipeReport(
                    receipt: WipeReceipt(records: 0, unsyncedChangeSets: 0, attachments: 0), wipedAt: Date(timeIntervalSince1970: 0),
                    receiptSent: true))
        }
        if let token = marker.token {
            // A store wiped by RevSync 0.12 kept the token: only its SHA-256 from now on.
            marker.tokenSHA256 = marker.tokenSHA256 ?? TokenHash.sha256(token)
            marker.token = nil
            // Best effort: a file that cannot be rewritten keeps the old token until the receipt removes the marker's key.
            try? writeMarker(marker, at: path)
        }
        return marker
    }

    private static func writeMarker(_ marker: WipeMarker, at path: String) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try PrivateFiles.write(try encoder.encode(marker), to: StoreFiles(path).wipeReport)
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
