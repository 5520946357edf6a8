public import Foundation
import Logging
public import RevSyncEngine
public import RevSyncProtocol
public import ServiceLifecycle

/// What the server learns about each device from its requests (the time, the revision it
/// claimed, its client version and outbox, bytes in and out, its last refusal, whether it holds
/// a live stream), and the requests per minute: kept in memory as requests end and written to
/// the database once a second, in one transaction of one row per device that made a request,
/// so that every instance sees the same and no commit waits for it.
///
/// The revision the server brought a device to is not kept here: the engine records it with
/// every response (`delivered_revision`), and so does the live feed with every push.
///
/// A server that crashes loses at most the last second of it; an instance that vanishes
/// leaves its devices shown live for at most ``liveWindow``.
public final class DeviceActivity: Service, Sendable {
    /// What one request tells about its device.
    public struct Request: Sendable {
        public var device: Int64
        public var clientVersion: String?
        /// The schema version the request spoke (`RevSync-Schema-Version`).
        public var schemaVersion: Int?
        public var pending: Int?
        public var missingAttachments: Int?
        public var claimedRevision: Revision?
        public var bytesIn = 0
        public var bytesOut = 0
        public var isSync = false
        public var committed = 0
        public var refusals: [Refusal] = []
        /// What the device's sync proved: whether its records' digest at `revision` was the
        /// server's (a verification's proof is written at once, not here).
        public var verification: (revision: Revision, equal: Bool)?
        /// What the proof said of the device's audit (`RevSync-Audited`).
        public var audited: Revision?
        /// Refused for the schema version it speaks (`upgrade_required`, `schema_ahead`).
        public var versionRefusal: String?
        /// Answered without an error (its version is no longer refused).
        public var served = false

        public init(device: Int64) {
            self.device = device
        }
    }

    private struct Pending {
        var devices: [Int64: DeviceActivityUpdate] = [:]
        var minutes: [Int64: TrafficMinute] = [:]
        /// The devices whose streams this instance vouched for last, and when.
        var vouched: Set<Int64> = []
        var vouchedAt: Int64 = 0
    }

    private let storage: any SyncStorage
    private let liveDevices: @Sendable () -> Set<Int64>
    private let logger: Logger
    private let pending = Locked(Pending())
    /// How often what was learnt is written.
    let interval: Duration
    /// How long a write that a device is live holds (it is written again well before).
    let liveWindow: Int64 = 60

    /// - Parameter liveDevices: the devices holding a stream to this instance now.
    init(storage: any SyncStorage, interval: Duration = .seconds(1), logger: Logger, liveDevices: @escaping @Sendable () -> Set<Int64>) {
        self.storage = storage
        self.interval = interval
        self.logger = logger
        self.liveDevices = liveDevices
    }

    /// Notes what a request told (called as its response leaves; never waits).
    public func record(_ request: Request, at date: Date = Date()) {
        let now = Int64(date.timeIntervalSince1970)
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let minute = now / 60
        pending.withLock { pending in
            var update = pending.devices[request.device] ?? DeviceActivityUpdate(device: request.device, lastSeen: now)
            update.lastSeen = max(update.lastSeen, now)
            if let version = request.clientVersion { update.clientVersion = version }
            if let version = request.schemaVersion { update.schemaVersion = version }
            // The later of a refusal for the version and a request served decides: an app
            // updated within the second it was refused is no longer refused.
            if let refusal = request.versionRefusal {
                update.versionRefusal = refusal
                update.versionRefusedAt = now
                update.versionServedAt = nil
            } else if request.served {
                update.versionRefusal = nil
                update.versionRefusedAt = nil
                update.versionServedAt = now
            }
            if let outbox = request.pending { update.pending = outbox }
            if let missing = request.missingAttachments { update.missingAttachments = missing }
            if let claimed = request.claimedRevision { update.claimedRevision = claimed }
            update.bytesIn += request.bytesIn
            update.bytesOut += request.bytesOut
            if request.isSync { update.syncs += 1 }
            if let refusal = request.refusals.last { update.refusal = refusal }
            if let (revision, equal) = request.verification {
                if equal {
                    update.verifiedRevision = revision
                    update.verifiedAt = now
                    update.verifiedAtMilliseconds = milliseconds
                    update.auditedRevision = request.audited
                } else {
                    update.mismatchAt = now
                    update.mismatchAtMilliseconds = milliseconds
                    update.mismatchRevision = revision
                    // A proof of this revision or an older one, seen before since the last flush, no longer stands.
                    if let proven = update.verifiedRevision, proven <= revision {
                        (update.verifiedRevision, update.verifiedAt, update.verifiedAtMilliseconds, update.auditedRevision) = (
                            nil, nil, nil, nil
                        )
                    }
                }
            }
            pending.devices[request.device] = update

            var traffic = pending.minutes[minute] ?? TrafficMinute(minute: minute)
            if request.isSync { traffic.syncs += 1 }
            traffic.commits += request.committed
            traffic.refusals += request.refusals.count
            traffic.bytesIn += request.bytesIn
            traffic.bytesOut += request.bytesOut
            pending.minutes[minute] = traffic
        }
    }

    /// Writes what was learnt since the last flush, and which devices hold a stream here.
    ///
    /// - Parameter live: the devices holding a stream here (by default, as the live feed says).
    public func flush(at date: Date = Date(), live: Set<Int64>? = nil) async throws {
        let now = Int64(date.timeIntervalSince1970)
        let live = live ?? liveDevices()
        let liveWindow = self.liveWindow
        let (updates, minutes, newlyLive, gone, refresh) = pending.withLock { pending in
            let updates = Array(pending.devices.values)
            let minutes = Array(pending.minutes.values)
            pending.devices = [:]
            pending.minutes = [:]
            // Vouched for again a third of the window before it lapses; at once when it changes.
            let refresh = now - pending.vouchedAt >= liveWindow / 3
            let newlyLive = refresh ? live : live.subtracting(pending.vouched)
            let gone = pending.vouched.subtracting(live)
            pending.vouched = live
            if refresh { pending.vouchedAt = now }
            return (updates, minutes, newlyLive, gone, refresh)
        }
        guard !updates.isEmpty || !minutes.isEmpty || !newlyLive.isEmpty || !gone.isEmpty || refresh else { return }
        do {
            try await storage.withWriter { writer in
                try writer.transaction {
                    try writer.recordActivity(updates, traffic: minutes)
                    if !newlyLive.isEmpty { try writer.recordLive(devices: Array(newlyLive), until: now + liveWindow) }
                    if !gone.isEmpty { try writer.recordLive(devices: Array(gone), until: nil) }
                    if refresh { try writer.purgeTraffic(before: now / 60 - 24 * 60) }
                }
            }
        } catch {
            // Kept for the next flush rather than lost.
            pending.withLock { pending in
                for update in updates where pending.devices[update.device] == nil { pending.devices[update.device] = update }
                for minute in minutes where pending.minutes[minute.minute] == nil { pending.minutes[minute.minute] = minute }
                pending.vouched.subtract(newlyLive)
                pending.vouched.formUnion(gone)
            }
            throw error
        }
    }

    /// Flushes before what reads the devices' activity back (the devices list, the overview),
    /// so that a device that synced a moment ago is seen; a failure is logged, and the list is
    /// read as the database has it.
    func flushBeforeReading() async {
        do { try await flush() } catch { logger.warning("device activity: cannot write it: \(error)") }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: self.interval) } catch { break }
                do { try await self.flush() } catch { self.logger.warning("device activity: cannot write it: \(error)") }
            }
        }
        // Shutting down: what was learnt last, and this instance's streams are over.
        do { try await flush(live: []) } catch { logger.warning("device activity: cannot write it: \(error)") }
    }
}
