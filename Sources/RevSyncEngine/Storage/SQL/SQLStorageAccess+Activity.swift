import RevSyncProtocol

/// Device activity, traffic per minute and the figures of the console, on both stores.
extension SQLStorageAccess {
    func deviceActivity() throws -> [Int64: DeviceActivityRecord] {
        var activity: [Int64: DeviceActivityRecord] = [:]
        try connection.query(
            """
            SELECT device_id, last_seen, claimed_revision, client_version, pending, bytes_in, bytes_out, syncs,
                refusal_at, refusal_reason, refusal_change_set, live_until, missing_attachments,
                verified_revision, verified_at, mismatch_at, repairs, repaired_records, repaired_at, schema_version,
                version_refusal, version_refused_at, version_served_at
            FROM _rs_device_activity
            """, []
        ) { row in
            guard let device = row[0].integerValue, let lastSeen = row[1].integerValue else {
                throw StorageError.corrupt("a device activity row has no device or time")
            }
            var refusal: Refusal?
            if let time = row[8].integerValue, let reason = row[9].textValue, let changeSet = row[10].textValue {
                refusal = Refusal(time: time, reason: ConflictReason(rawValue: reason), changeSetID: changeSet)
            }
            activity[device] = DeviceActivityRecord(
                device: device, lastSeen: lastSeen, clientVersion: row[3].textValue, pending: row[4].integerValue.map { Int($0) },
                claimedRevision: row[2].integerValue, bytesIn: row[5].integerValue ?? 0, bytesOut: row[6].integerValue ?? 0,
                syncs: row[7].integerValue ?? 0, lastRefusal: refusal, liveUntil: row[11].integerValue)
            activity[device]?.missingAttachments = row[12].integerValue.map { Int($0) }
            activity[device]?.verifiedRevision = row[13].integerValue
            activity[device]?.verifiedAt = row[14].integerValue
            activity[device]?.mismatchAt = row[15].integerValue
            activity[device]?.repairs = row[16].integerValue ?? 0
            activity[device]?.repairedRecords = row[17].integerValue
            activity[device]?.repairedAt = row[18].integerValue
            activity[device]?.schemaVersion = row[19].integerValue.map { Int($0) }
            if let refusedAt = row[21].integerValue, refusedAt >= (row[22].integerValue ?? .min) {
                activity[device]?.versionRefusal = row[20].textValue
                activity[device]?.versionRefusedAt = refusedAt
            }
        }
        return activity
    }

    func traffic(since minute: Int64) throws -> [TrafficMinute] {
        try connection.rows(
            "SELECT minute, syncs, commits, refusals, bytes_in, bytes_out FROM _rs_traffic WHERE minute >= ? ORDER BY minute",
            [.integer(minute)]
        ).map { row in
            var traffic = TrafficMinute(minute: row[0].integerValue ?? 0)
            traffic.syncs = Int(row[1].integerValue ?? 0)
            traffic.commits = Int(row[2].integerValue ?? 0)
            traffic.refusals = Int(row[3].integerValue ?? 0)
            traffic.bytesIn = Int(row[4].integerValue ?? 0)
            traffic.bytesOut = Int(row[5].integerValue ?? 0)
            return traffic
        }
    }

    func refusals(device: Int64?, limit: Int, handled: Bool) throws -> [StoredRefusal] {
        let filter = (device == nil ? "" : " AND device_id = ?") + (handled ? "" : " AND handled_at IS NULL")
        let arguments: [SQLValue] = (device.map { [SQLValue.integer($0)] } ?? []) + [.integer(Int64(limit))]
        return try connection.rows(
            """
            SELECT device_id, change_set_id, processed_at, conflict, mine, base, theirs, detail_erased, handled_at, handled_by
            FROM _rs_outcomes WHERE revision IS NULL\(filter) ORDER BY processed_at DESC LIMIT ?
            """, arguments
        ).map { row in
            let id = row[1].textValue ?? "?"
            var refusal = StoredRefusal(
                device: row[0].integerValue ?? 0, changeSetID: id, time: row[2].integerValue ?? 0,
                reason: ConflictReason(rawValue: "unknown"), entries: [])
            refusal.handledAt = row[8].integerValue
            refusal.handledBy = row[9].integerValue
            // One unreadable row is shown as such; it never fails the page that lists it.
            do {
                guard let json = row[3].bytesValue, case .conflict(let reason, let entries) = try StoredOutcome.decodeConflict(json)
                else { throw StorageError.corrupt("the outcome has no conflict") }
                refusal.reason = reason
                refusal.entries = entries
            } catch {
                refusal.detailNote = "This refusal's outcome cannot be read (\(error))."
                return refusal
            }
            if let erasure = row[7].integerValue {
                refusal.detailNote = "What it wrote was removed by erasure \(erasure)."
            } else if let mine = row[4].bytesValue, let base = row[5].bytesValue, let theirs = row[6].bytesValue {
                do {
                    refusal.records =
                        RefusalDetail(
                            mine: try ChangeSet(json: mine, sender: .client), base: try ChangeSet(json: base, sender: .server),
                            theirs: try ChangeSet(json: theirs, sender: .server)
                        ).records
                } catch {
                    refusal.detailNote = "What it wrote cannot be read (\(error))."
                }
            }
            return refusal
        }
    }

    func unhandledRefusalCounts() throws -> [Int64: Int] {
        var counts: [Int64: Int] = [:]
        try connection.query(
            "SELECT device_id, count(*) FROM _rs_outcomes WHERE revision IS NULL AND handled_at IS NULL GROUP BY device_id", []
        ) { row in
            if let device = row[0].integerValue, let count = row[1].integerValue { counts[device] = Int(count) }
        }
        return counts
    }

    func markRefusal(device: Int64, changeSetID: String, handledBy admin: Int64?, at time: Int64) throws -> Bool {
        try connection.execute(
            "UPDATE _rs_outcomes SET handled_at = ?, handled_by = ? WHERE device_id = ? AND change_set_id = ? AND revision IS NULL",
            [admin == nil ? .null : .integer(time), admin.map(SQLValue.integer) ?? .null, .integer(device), .text(changeSetID)]) > 0
    }

    func commitTimes(_ revisions: [Revision]) throws -> [Revision: Int64] {
        var times: [Revision: Int64] = [:]
        for revision in Set(revisions) {
            if let time = try connection.firstRow("SELECT committed_at FROM _rs_log WHERE revision = ?", [.integer(revision)])?.first?
                .integerValue
            {
                times[revision] = time
            }
        }
        return times
    }

    func consoleSession(hash: String) throws -> ConsoleSessionRow? {
        guard
            let row = try connection.firstRow(
                """
                SELECT d.id, d.name, d.role, d.delivered_revision, d.user_id, s.csrf, s.created_at, s.last_used
                FROM _rs_console_sessions s JOIN _rs_devices d ON d.id = s.device_id
                WHERE s.session_hash = ? AND d.revoked_at IS NULL AND d.role = 'admin'
                """, [.text(hash)])
        else { return nil }
        guard let csrf = row[5].textValue, let created = row[6].integerValue, let used = row[7].integerValue else {
            throw StorageError.corrupt("a console session row does not have the expected columns")
        }
        return ConsoleSessionRow(device: try Self.device(Array(row[0..<5])), csrf: csrf, createdAt: created, lastUsed: used)
    }

    func createConsoleSession(hash: String, device: Int64, csrf: String, at time: Int64) throws {
        try connection.execute(
            "INSERT INTO _rs_console_sessions (session_hash, device_id, csrf, created_at, last_used) VALUES (?, ?, ?, ?, ?)",
            [.text(hash), .integer(device), .text(csrf), .integer(time), .integer(time)])
    }

    func touchConsoleSession(hash: String, at time: Int64) throws {
        try connection.execute("UPDATE _rs_console_sessions SET last_used = ? WHERE session_hash = ?", [.integer(time), .text(hash)])
    }

    func deleteConsoleSessions(hash: String?, idleBefore: Int64?) throws {
        if let hash { try connection.execute("DELETE FROM _rs_console_sessions WHERE session_hash = ?", [.text(hash)]) }
        if let idleBefore { try connection.execute("DELETE FROM _rs_console_sessions WHERE last_used < ?", [.integer(idleBefore)]) }
    }

    func recordCounts() throws -> [(entity: String, count: Int64)] {
        try entities.keys.sorted().map { name in
            (name, try connection.firstRow("SELECT count(*) FROM \(quoted(name))")?.first?.integerValue ?? 0)
        }
    }

    func databaseBytes() throws -> Int64? {
        switch dialect.database {
        case .sqlite:
            let pages = try connection.firstRow("PRAGMA page_count")?.first?.integerValue
            let size = try connection.firstRow("PRAGMA page_size")?.first?.integerValue
            return pages.flatMap { pages in size.map { pages * $0 } }
        case .postgres:
            return try connection.firstRow("SELECT pg_database_size(current_database())")?.first?.integerValue
        }
    }

    func recordActivity(_ updates: [DeviceActivityUpdate], traffic: [TrafficMinute]) throws {
        for update in updates {
            // Totals add up; the rest is the latest known (a value not sent this time stays).
            try connection.execute(
                """
                INSERT INTO _rs_device_activity (device_id, last_seen, claimed_revision, client_version, pending, bytes_in, bytes_out,
                    syncs, refusal_at, refusal_reason, refusal_change_set, missing_attachments, verified_revision, verified_at, mismatch_at,
                    schema_version, version_refusal, version_refused_at, version_served_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (device_id) DO UPDATE SET
                    last_seen = CASE WHEN excluded.last_seen > _rs_device_activity.last_seen
                        THEN excluded.last_seen ELSE _rs_device_activity.last_seen END,
                    claimed_revision = COALESCE(excluded.claimed_revision, _rs_device_activity.claimed_revision),
                    client_version = COALESCE(excluded.client_version, _rs_device_activity.client_version),
                    pending = COALESCE(excluded.pending, _rs_device_activity.pending),
                    bytes_in = _rs_device_activity.bytes_in + excluded.bytes_in,
                    bytes_out = _rs_device_activity.bytes_out + excluded.bytes_out,
                    syncs = _rs_device_activity.syncs + excluded.syncs,
                    refusal_at = COALESCE(excluded.refusal_at, _rs_device_activity.refusal_at),
                    refusal_reason = COALESCE(excluded.refusal_reason, _rs_device_activity.refusal_reason),
                    refusal_change_set = COALESCE(excluded.refusal_change_set, _rs_device_activity.refusal_change_set),
                    missing_attachments = COALESCE(excluded.missing_attachments, _rs_device_activity.missing_attachments),
                    verified_revision = \(Self.newerVerification("verified_revision")),
                    verified_at = \(Self.newerVerification("verified_at")),
                    mismatch_at = COALESCE(excluded.mismatch_at, _rs_device_activity.mismatch_at),
                    schema_version = COALESCE(excluded.schema_version, _rs_device_activity.schema_version),
                    version_refusal = CASE WHEN excluded.version_served_at IS NOT NULL THEN NULL
                        ELSE COALESCE(excluded.version_refusal, _rs_device_activity.version_refusal) END,
                    version_refused_at = CASE WHEN excluded.version_served_at IS NOT NULL THEN NULL
                        ELSE COALESCE(excluded.version_refused_at, _rs_device_activity.version_refused_at) END,
                    version_served_at = COALESCE(excluded.version_served_at, _rs_device_activity.version_served_at)
                """,
                [
                    .integer(update.device), .integer(update.lastSeen), update.claimedRevision.map(SQLValue.integer) ?? .null,
                    update.clientVersion.map(SQLValue.text) ?? .null, update.pending.map { .integer(Int64($0)) } ?? .null,
                    .integer(Int64(update.bytesIn)), .integer(Int64(update.bytesOut)), .integer(Int64(update.syncs)),
                    update.refusal.map { .integer($0.time) } ?? .null, update.refusal.map { .text($0.reason.rawValue) } ?? .null,
                    update.refusal.map { .text($0.changeSetID) } ?? .null,
                    update.missingAttachments.map { .integer(Int64($0)) } ?? .null,
                    update.verifiedRevision.map(SQLValue.integer) ?? .null, update.verifiedAt.map(SQLValue.integer) ?? .null,
                    update.mismatchAt.map(SQLValue.integer) ?? .null, update.schemaVersion.map { .integer(Int64($0)) } ?? .null,
                    update.versionRefusal.map(SQLValue.text) ?? .null, update.versionRefusedAt.map(SQLValue.integer) ?? .null,
                    update.versionServedAt.map(SQLValue.integer) ?? .null,
                ])
        }
        for minute in traffic {
            try connection.execute(
                """
                INSERT INTO _rs_traffic (minute, syncs, commits, refusals, bytes_in, bytes_out) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (minute) DO UPDATE SET syncs = _rs_traffic.syncs + excluded.syncs,
                    commits = _rs_traffic.commits + excluded.commits, refusals = _rs_traffic.refusals + excluded.refusals,
                    bytes_in = _rs_traffic.bytes_in + excluded.bytes_in, bytes_out = _rs_traffic.bytes_out + excluded.bytes_out
                """,
                [
                    .integer(minute.minute), .integer(Int64(minute.syncs)), .integer(Int64(minute.commits)),
                    .integer(Int64(minute.refusals)), .integer(Int64(minute.bytesIn)), .integer(Int64(minute.bytesOut)),
                ])
        }
    }

    /// The stored proof unless the new one is of a later revision (proofs arrive out of order:
    /// a sync's is written with the activity, a verification's at once).
    private static func newerVerification(_ column: String) -> String {
        """
        CASE WHEN excluded.verified_revision IS NOT NULL
            AND excluded.verified_revision >= COALESCE(_rs_device_activity.verified_revision, -1)
            THEN excluded.\(column) ELSE _rs_device_activity.\(column) END
        """
    }

    func recordVerification(device: Int64, revision: Revision, equal: Bool?, repaired: Int, at time: Int64) throws {
        try connection.execute(
            """
            INSERT INTO _rs_device_activity (device_id, last_seen, bytes_in, bytes_out, syncs, verified_revision, verified_at, mismatch_at,
                repairs, repaired_records, repaired_at)
            VALUES (?, ?, 0, 0, 0, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (device_id) DO UPDATE SET
                verified_revision = \(Self.newerVerification("verified_revision")),
                verified_at = \(Self.newerVerification("verified_at")),
                mismatch_at = COALESCE(excluded.mismatch_at, _rs_device_activity.mismatch_at),
                repairs = COALESCE(_rs_device_activity.repairs, 0) + excluded.repairs,
                repaired_records = COALESCE(excluded.repaired_records, _rs_device_activity.repaired_records),
                repaired_at = COALESCE(excluded.repaired_at, _rs_device_activity.repaired_at)
            """,
            [
                .integer(device), .integer(time), equal == true ? .integer(revision) : .null, equal == true ? .integer(time) : .null,
                equal == false ? .integer(time) : .null, .integer(Int64(repaired)), repaired > 0 ? .integer(Int64(repaired)) : .null,
                repaired > 0 ? .integer(time) : .null,
            ])
    }

    func recordLive(devices: [Int64], until: Int64?) throws {
        for device in devices {
            try connection.execute(
                """
                INSERT INTO _rs_device_activity (device_id, last_seen, bytes_in, bytes_out, syncs, live_until) VALUES (?, ?, 0, 0, 0, ?)
                ON CONFLICT (device_id) DO UPDATE SET live_until = excluded.live_until
                """, [.integer(device), .integer(Self.now()), until.map(SQLValue.integer) ?? .null])
        }
    }

    func purgeTraffic(before minute: Int64) throws {
        try connection.execute("DELETE FROM _rs_traffic WHERE minute < ?", [.integer(minute)])
    }
}
