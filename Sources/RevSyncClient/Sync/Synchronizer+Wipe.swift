public import Foundation
import RevSyncProtocol

/// The device was wiped (its token revoked with a wipe order, or its offline lease ran out):
/// what ``Synchronizer`` throws from then on, after ``Synchronizer/wipes()`` told it.
/// The app removes what it keeps itself (the token in the Keychain) and shows a screen; the
/// store is gone (``LocalStore/wipeReport(at:)`` says what was removed).
public struct DeviceWiped: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the wipe removed, and whether the server has the receipt.
    public var report: WipeReport

    /// The error for the wipe `report` tells.
    public init(report: WipeReport) { self.report = report }

    public var description: String { WipedStore.description(report, at: nil) }
}

/// How a wipe is told in words.
enum WipedStore {
    static func description(_ report: WipeReport, at path: String?) -> String {
        let store = path.map { "the store at \($0)" } ?? "this device's store"
        let why = report.reason == .ordered ? "by order of the server (its token was revoked with a wipe)" : "its offline lease ran out"
        let receipt = report.receiptSent ? "the server has the receipt" : "the receipt is sent when the server is reached"
        return
            "\(store) was wiped on \(report.wipedAt.formatted(.iso8601)): \(why); \(counted(report.records, "record")), \(counted(report.unsyncedChangeSets, "unsynced change set")) and \(counted(report.attachments, "attachment")) removed; \(receipt)"
    }
}

extension Synchronizer {
    /// The store's wipes (``LocalStore/wipes()``): when the server orders one (its token revoked
    /// with a wipe) the store removes everything RevSync kept for it, and every sync throws
    /// ``DeviceWiped`` from then on. The app removes its own copy of the token (the Keychain) and
    /// shows a screen.
    ///
    /// A stream of its own rather than a ``SyncEvent`` case: a new case would break the apps
    /// that switch over every event.
    public nonisolated func wipes() -> AsyncStream<WipeReport> {
        store.wipes()
    }

    /// Wipes the store on the server's order: the store removes everything RevSync keeps for it,
    /// the app hears it (``wipes()``), and the server gets the receipt (if it can be reached;
    /// otherwise the next ``sync()`` or ``LocalStore/sendWipeReceipt(at:server:transport:)``
    /// sends it). Runs between syncs, never inside one: nothing is half applied.
    ///
    /// - Throws: always: ``DeviceWiped``.
    func wipeOnOrder() async throws {
        if let wiped { throw DeviceWiped(report: wiped) }
        var report = try store.wipeNow(reason: .ordered, server: server, announce: false)
        connection = .offline
        wiped = report
        report = await sendReceipt() ?? report
        store.wipeBroadcaster.emit(report)
        throw DeviceWiped(report: report)
    }

    /// The receipt of the store's wipe, if it was not sent yet: the report as it then stands, or
    /// `nil` when it still cannot be sent (the network: the next sync tries again).
    func sendReceipt() async -> WipeReport? {
        do {
            let report = try await LocalStore.sendWipeReceipt(at: store.path, server: server, transport: transport)
            if let report { wiped = report }
            return report
        } catch {
            return nil
        }
    }

    /// A store wiped by anything (an attachment's download answered `410`, the app's own
    /// ``LocalStore/wipe(reason:)``): what ``DeviceWiped`` reports.
    func wipedStore() -> WipeReport? {
        if let wiped { return wiped }
        guard store.wipeBegun.current else { return nil }
        wiped = LocalStore.wipeReport(at: store.path)
        return wiped
    }
}
