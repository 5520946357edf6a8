import RevSyncProtocol

/// Device activity (last seen, proofs, live) and traffic per minute, on both stores.
extension SQLStorageAccess {
    func deviceActivity() throws -> [Int64: DeviceActivityRecord] {
        var activity: [Int64: DeviceActivityRecord] = [:]
        try connection.query(
            """
            SELECT device_id, last_seen, claimed_revision, client_version, pending, bytes_in, bytes_out, syncs,
                refusal_at, refusal_reason, refusal_change_set, live_until, missing_attachments,
                verified_revision, verified_at, mismatch_at, repairs, repaired_records, repaired_at, schema_version,
                version_refusal, version_refused_at, version_served_at, audited_revision
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
            activity[device]?.auditedRevision = row[23].integerValue
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

    func recordActivity(_ updates: [DeviceActivityUpdate], traffic: [TrafficMinute]) throws {
        for update in updates {
            // Totals add up; the rest is the latest known (a value not sent this time stays).
            try connection.execute(
                """
                INSERT INTO _rs_device_activity (device_id, last_seen, claimed_revision, client_version, pending, bytes_in, bytes_out,
                    syncs, refusal_at, refusal_reason, refusal_change_set, missing_attachments, verified_revision, verified_at, mismatch_at,
                    schema_version, version_refusal, version_refused_at, version_served_at, audited_revision, mismatch_revision,
                    verified_at_ms, mismatch_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
                    \(Self.proofAndMismatch),
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
                    update.versionServedAt.map(SQLValue.integer) ?? .null, update.auditedRevision.map(SQLValue.integer) ?? .null,
                    update.mismatchRevision.map(SQLValue.integer) ?? .null,
                    update.verifiedAtMilliseconds.map(SQLValue.integer) ?? .null,
                    update.mismatchAtMilliseconds.map(SQLValue.integer) ?? .null,
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

    /// The columns of the proof and of the mismatch, as an update writes them: the stored proof
    /// unless the new one is of a revision as late and no mismatch as new stands against it (a
    /// proof of the same revision made after a mismatch, by a repair, stands); none once the
    /// device's digest was found to differ, after the proof, at the proof's revision or a later
    /// one. What happened later is decided by the millisecond of each (proofs arrive out of order:
    /// a sync's is written with the activity, once a second, a verification's at once), and a
    /// row written before the milliseconds were kept counts its second's first.
    private static let proofAndMismatch: String = {
        let stored = "_rs_device_activity"
        let storedProof = "COALESCE(\(stored).verified_at_ms, \(stored).verified_at * 1000, -1)"
        let storedMismatch = "COALESCE(\(stored).mismatch_at_ms, \(stored).mismatch_at * 1000, -1)"
        let newProof = "COALESCE(excluded.verified_at_ms, excluded.verified_at * 1000)"
        let newMismatch = "COALESCE(excluded.mismatch_at_ms, excluded.mismatch_at * 1000)"
        func proof(_ column: String) -> String {
            """
            \(column) = CASE WHEN excluded.verified_revision IS NOT NULL
                AND excluded.verified_revision >= COALESCE(\(stored).verified_revision, -1)
                AND NOT (COALESCE(\(stored).mismatch_revision, -1) >= excluded.verified_revision
                    AND \(storedMismatch) > \(newProof))
                THEN excluded.\(column)
                WHEN excluded.mismatch_revision IS NOT NULL
                AND excluded.mismatch_revision >= COALESCE(\(stored).verified_revision, -1)
                AND \(newMismatch) > \(storedProof)
                THEN NULL ELSE \(stored).\(column) END
            """
        }
        func mismatch(_ column: String) -> String {
            """
            \(column) = CASE WHEN excluded.mismatch_at IS NOT NULL AND \(newMismatch) >= \(storedMismatch)
                THEN excluded.\(column) ELSE \(stored).\(column) END
            """
        }
        return
            (["verified_revision", "verified_at", "verified_at_ms", "audited_revision"].map(proof)
            + ["mismatch_at", "mismatch_at_ms", "mismatch_revision"].map(mismatch)).joined(separator: ",\n")
    }()

    func recordVerification(
        device: Int64, revision: Revision, equal: Bool?, audited: Revision?, repaired: Int, atMilliseconds milliseconds: Int64
    ) throws {
        let time = milliseconds / 1000
        try connection.execute(
            """
            INSERT INTO _rs_device_activity (device_id, last_seen, bytes_in, bytes_out, syncs, verified_revision, verified_at, mismatch_at,
                repairs, repaired_records, repaired_at, audited_revision, mismatch_revision, verified_at_ms, mismatch_at_ms)
            VALUES (?, ?, 0, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (device_id) DO UPDATE SET
                \(Self.proofAndMismatch),
                repairs = COALESCE(_rs_device_activity.repairs, 0) + excluded.repairs,
                repaired_records = COALESCE(excluded.repaired_records, _rs_device_activity.repaired_records),
                repaired_at = COALESCE(excluded.repaired_at, _rs_device_activity.repaired_at)
            """,
            [
                .integer(device), .integer(time), equal == true ? .integer(revision) : .null, equal == true ? .integer(time) : .null,
                equal == false ? .integer(time) : .null, .integer(Int64(repaired)), repaired > 0 ? .integer(Int64(repaired)) : .null,
                repaired > 0 ? .integer(time) : .null, equal == true ? audited.map(SQLValue.integer) ?? .null : .null,
                equal == false ? .integer(revision) : .null, equal == true ? .integer(milliseconds) : .null,
                equal == false ? .integer(milliseconds) : .null,
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
