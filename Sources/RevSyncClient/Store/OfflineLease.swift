public import Foundation
import RevSyncProtocol
import RevSyncSQLite

/// The offline lease (the schema's `maxOfflineDays`, or `revsync-server serve
/// --max-offline-days N`; protocol section 16): a store that has not heard from the server for
/// longer than the lease the server last set wipes itself when it opens, unsynced edits and all.
///
/// **Time is counted by the device's clock against itself, never against the server's.** A
/// tablet whose clock is days slow or fast (its battery ran flat and its date reset; nobody set
/// it) counts its days offline like any other: what counts is how far its own clock moved since
/// the last answer. Each reading of the clock (every answer, every open) adds the time since the
/// reading before, and never less than nothing:
///
/// - a clock set back (a reset date) adds nothing for that jump, and counts on from its new
///   reading;
/// - a clock put right again after it was set back adds only what it moved past the highest
///   reading before the jump back, less what was counted in between: the days in the wrong
///   date count once;
/// - the server's clock (`RevSync-Server-Time`) is kept for what the operator is shown, and
///   obeyed in nothing: a server clock (or a header on the way) far ahead wipes nobody.
///
/// What the device cannot tell from a real absence is its clock jumping far ahead: a tablet
/// whose date is set years ahead while it is offline wipes itself at its next open.
struct OfflineLease: Sendable, Hashable {
    /// The lease days a server may set; an answer with another value is refused, not kept.
    static let allowedDays = 1...3650
    /// The clock a server may claim (seconds since 1970, up to the year 9999); another is refused.
    static let allowedServerTimes: ClosedRange<Int64> = 0...253_402_300_799

    /// The lease, in days.
    var days: Int
    /// Seconds counted since the last answer.
    var offline: Int64 = 0
    /// The device's clock at its last reading.
    var lastReading: Int64
    /// The highest reading since the last answer, and what was counted by then.
    var highWater: Int64
    var offlineAtHighWater: Int64 = 0

    /// A lease of `days`, counted from an answer at `now`.
    init(days: Int, answeredAt now: Int64) {
        self.days = days
        lastReading = now
        highWater = now
    }

    /// The device's clock now, in the seconds the lease counts.
    static func clock(_ now: Date) -> Int64 {
        let seconds = now.timeIntervalSince1970
        return seconds.isFinite ? Int64(seconds.clamped(to: 0...Double(allowedServerTimes.upperBound))) : 0
    }

    /// Reads the clock: adds the time since the last reading, as the type's comment says.
    mutating func read(clock reading: Int64) {
        let now = reading.clamped(to: Self.allowedServerTimes)
        if now >= highWater {
            offline = max(offline, offlineAtHighWater &+ (now - highWater))
            highWater = now
            offlineAtHighWater = offline
        } else if now > lastReading {
            offline += now - lastReading
        }
        lastReading = now
    }

    /// The lease's length, in seconds.
    var length: Int64 { Int64(days) * 86_400 }

    /// Whether the store has been offline for longer than the lease.
    var expired: Bool { offline > length }

    /// When the lease ends by the device's clock, read at `now` (already counted by ``read(clock:)``).
    func endsAt(now: Date) -> Date {
        now.addingTimeInterval(TimeInterval(length - offline))
    }

    /// When the app is warned that the lease is ending: three days before its end, or a third of
    /// the lease before it when that is shorter.
    var warningPeriod: Int64 { min(3 * 86_400, length / 3) }

    // MARK: Kept in the store

    /// `lease_count`: `offline lastReading highWater offlineAtHighWater`, seconds.
    private var kept: String { "\(offline) \(lastReading) \(highWater) \(offlineAtHighWater)" }

    /// The lease the store keeps; `nil` without one (the server never set one, or stopped).
    static func read(from state: StoreState) throws -> OfflineLease? {
        guard let days = try state.string(.leaseDays).flatMap({ Int($0) }), allowedDays.contains(days) else { return nil }
        let counted = try state.string(.leaseCount)?.split(separator: " ").compactMap { Int64($0) } ?? []
        // Only what this type writes: anything else (a file edited by hand) counts from the last answer.
        if counted.count == 4, counted.allSatisfy(allowedServerTimes.contains) {
            var lease = OfflineLease(days: days, answeredAt: counted[1])
            (lease.offline, lease.highWater, lease.offlineAtHighWater) = (counted[0], counted[2], counted[3])
            return lease
        }
        // A store from before the count was kept: counted from the last answer.
        guard let answered = try state.string(.lastServerAnswer).flatMap({ Int64($0) }), allowedServerTimes.contains(answered) else {
            return nil
        }
        return OfflineLease(days: days, answeredAt: answered)
    }

    func write(to state: StoreState) throws {
        try state.set(.leaseDays, String(days))
        try state.set(.leaseCount, kept)
    }
}

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
    ///
    /// - Throws: ``SyncFailure`` `invalidResponse` for a lease or a clock out of range (not a
    ///   number, a lease of 0 or over 3,650 days, a clock before 1970 or past the year 9999):
    ///   the answer is refused whole, and the store keeps the lease it had.
    init(headers: [String: String]) throws {
        leaseDays = try headers[RevSyncHeader.key(RevSyncHeader.maxOfflineDays)].map { text in
            guard let days = Int(text), OfflineLease.allowedDays.contains(days) else {
                throw SyncFailure.invalidResponse(
                    "\(RevSyncHeader.maxOfflineDays): \(text.prefix(40)) is not a lease of 1 to 3650 days; the answer was not applied")
            }
            return days
        }
        serverTime = try headers[RevSyncHeader.key(RevSyncHeader.serverTime)].map { text in
            guard let time = Int64(text), OfflineLease.allowedServerTimes.contains(time) else {
                throw SyncFailure.invalidResponse(
                    "\(RevSyncHeader.serverTime): \(text.prefix(40)) is not a clock (seconds since 1970); the answer was not applied")
            }
            return time
        }
    }

    /// The answer came at `now` (the device's clock): the lease counts from zero.
    func record(in state: StoreState, at now: Date) throws {
        let clock = OfflineLease.clock(now)
        try state.set(.lastServerAnswer, String(clock))
        if let serverTime { try state.set(.lastServerTime, String(serverTime)) }
        guard let leaseDays else {
            // A lease the server no longer sets stops counting.
            try state.set(.leaseDays, nil)
            try state.set(.leaseCount, nil)
            return
        }
        try OfflineLease(days: leaseDays, answeredAt: clock).write(to: state)
    }
}

/// A lease about to end: what ``LocalStore/leaseWarnings()`` tells the app, so that it asks the
/// user to connect before the store wipes itself with the edits it has not sent.
public struct LeaseWarning: Sendable, Hashable {
    /// When the lease ends, by the device's clock: the first open after it wipes the store.
    public var endsAt: Date
    /// The change sets the store has not sent: what the wipe would discard.
    public var unsyncedChangeSets: Int
}

extension LocalStore {
    /// When the offline lease ends, by the device's clock (`nil`: no lease): the first open
    /// after it wipes the store, unsent edits included, unless a sync reaches the server first.
    public func leaseEndsAt() async throws -> Date? {
        let now = DeviceClock.now(for: path)
        return try await pool.read { db -> Date? in
            guard var lease = try OfflineLease.read(from: StoreState(db: db)) else { return nil }
            lease.read(clock: OfflineLease.clock(now))
            return lease.endsAt(now: now)
        }
    }

    /// Warnings that the offline lease is about to end: one when the store opens within three
    /// days of its end (a third of the lease, for leases under nine days), and again after each
    /// sync that failed to reach the server within that time. The newest is kept for a listener
    /// that comes later. Show it, and ask the user to connect: a store past its lease wipes
    /// itself at its next open, with the change sets it has not sent.
    public nonisolated func leaseWarnings() -> AsyncStream<LeaseWarning> {
        leaseBroadcaster.stream()
    }

    /// Tells ``leaseWarnings()`` if the lease ends within its warning period.
    func warnIfLeaseEnding() async {
        let now = DeviceClock.now(for: path)
        // A store that cannot be read now warns at the next sync; the lease itself is checked at open.
        guard
            let warning = try? await pool.read({ db -> LeaseWarning? in
                guard var lease = try OfflineLease.read(from: StoreState(db: db)) else { return nil }
                lease.read(clock: OfflineLease.clock(now))
                guard lease.length - lease.offline <= lease.warningPeriod else { return nil }
                return LeaseWarning(endsAt: lease.endsAt(now: now), unsyncedChangeSets: try Outbox(db: db).count())
            })
        else { return }
        leaseBroadcaster.emit(warning)
    }

    /// The server was heard from (a live push): the lease counts from now. Written at most once
    /// an hour: a lease is days.
    func recordServerHeard() async {
        let now = DeviceClock.now(for: path)
        let due = lastHeardRecorded.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= 3600 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        // Best effort: a push that could not move the lease leaves it counting from the last
        // answer, which only makes it end sooner, never later.
        _ = try? await ownWrite { db in
            let state = StoreState(db: db)
            guard let days = try OfflineLease.read(from: state)?.days else { return }
            try ServerContact(leaseDays: days).record(in: state, at: now)
        }
    }

    /// At open: the clock read into the lease (kept), and a store past its lease wiped (the
    /// receipt waits for the server).
    ///
    /// - Throws: ``LocalStoreError`` `wiped` when it wiped the store.
    func wipeIfLeaseExpired() throws {
        let now = DeviceClock.now(for: path)
        let expired = try ownWriteNow { db -> Bool in
            let state = StoreState(db: db)
            guard var lease = try OfflineLease.read(from: state) else { return false }
            lease.read(clock: OfflineLease.clock(now))
            try lease.write(to: state)
            return lease.expired
        }
        guard expired else { return }
        let report = try wipeNow(reason: .leaseExpired, server: nil)
        throw LocalStoreError(.wiped, WipedStore.description(report, at: path))
    }
}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self {
        min(max(self, range.lowerBound), range.upperBound)
    }
}

/// The device's clock as the store reads it: the system's, or for tests, the system's moved by
/// an offset per store (a tablet whose clock is days slow, a lease that ran out).
enum DeviceClock {
    private static let offsets = Locked<[String: TimeInterval]>([:])

    /// The clock of the store at `path` now.
    static func now(for path: String) -> Date {
        Date().addingTimeInterval(offsets.current[path] ?? 0)
    }

    /// Tests: the store at `path` reads its clock `seconds` away from the system's (`nil`: not).
    static func setOffset(_ seconds: TimeInterval?, forStoreAt path: String) {
        offsets.withLock { $0[path] = seconds }
    }
}
