import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol

/// A device lost after the work (``SimulationConfiguration/lostDevices``): its token revoked
/// with a wipe order, it comes back once, and its next request wipes it.
struct LostDevice: Sendable {
    let name: String
    let deviceID: Int64
    /// Where its store was.
    let storePath: String
    /// How many change sets its outbox held when it was lost (what the receipt counts: some may
    /// have been committed already, their answers lost on the way).
    let outbox: Int
    /// Those the server had not committed when it was lost: never to reach it.
    let unsent: Set<String>
    let report: WipeReport
}

extension Simulation {
    /// Loses `count` devices (never the first, which seeded the data): orders each wiped, and
    /// lets it come back once.
    static func loseDevices(_ devices: [SimulatedDevice], count: Int, storage: any SyncStorage) async throws -> [LostDevice] {
        var lost: [LostDevice] = []
        for device in devices.dropFirst().prefix(count) {
            let outbox = try await device.store.pendingChangeSets().compactMap(\.id)
            let logged = try await storage.withReader { reader in
                Set(try reader.logEntries(after: 0, through: try reader.currentRevision()).compactMap(\.changeSetID))
            }
            let unsent = Set(outbox).subtracting(logged)
            _ = try await storage.withWriter { try $0.orderWipe(id: device.deviceID) }
            var report: WipeReport?
            for _ in 0..<50 where report == nil {
                do {
                    _ = try await device.synchronizer.sync()
                    throw SimulationError("\(device.name) synced after its wipe was ordered")
                } catch let wiped as DeviceWiped {
                    report = wiped.report
                } catch let failure as SyncFailure where failure.isRetryable {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            guard var wiped = report else { throw SimulationError("\(device.name) did not learn of its wipe") }
            // A receipt the network kept back is sent again, as an app's next launch does.
            for _ in 0..<50 where !wiped.receiptSent {
                if let sent = try? await LocalStore.sendWipeReceipt(at: device.store.path) { wiped = sent }
            }
            lost.append(
                LostDevice(
                    name: device.name, deviceID: device.deviceID, storePath: device.store.path, outbox: outbox.count, unsent: unsent,
                    report: wiped))
        }
        return lost
    }
}

/// The invariant of the lost devices.
enum LostDevices {
    /// Each lost device wiped itself (no file of its store left but the wipe's report), the
    /// server has its receipt with the change sets it had not sent, and none of those is in the
    /// log.
    static func check(_ lost: [LostDevice], storage: any SyncStorage) async throws -> InvariantCheck {
        var check = InvariantCheck(
            promise:
                "every lost device wiped itself (nothing of its store left), its receipt is on the server, its unsent change sets are not")
        let (records, log) = try await storage.withReader { reader in
            (try reader.allDevices(), try reader.logEntries(after: 0, through: try reader.currentRevision()))
        }
        let logged = Set(log.compactMap(\.changeSetID))
        for device in lost {
            check.total += 1
            let url = URL(fileURLWithPath: device.storePath)
            let left =
                (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path))?
                .filter { $0.hasPrefix(url.lastPathComponent) && !$0.hasSuffix(".wiped") && !$0.hasSuffix(".log") } ?? []
            let receipt = records.first { $0.device.id == device.deviceID }?.wipe?.receipt
            let arrived = device.unsent.intersection(logged)
            if !left.isEmpty {
                check.violations.append("\(device.name): files left: \(left.joined(separator: ", "))")
            } else if receipt == nil || !device.report.receiptSent {
                check.violations.append("\(device.name): no receipt on the server")
            } else if receipt?.unsyncedChangeSets != Int64(device.outbox) {
                check.violations.append(
                    "\(device.name): the receipt counts \(receipt?.unsyncedChangeSets ?? -1) unsent change sets, the outbox held \(device.outbox)"
                )
            } else if !arrived.isEmpty {
                check.violations.append(
                    "\(device.name): unsent change sets on the server: \(arrived.sorted().joined(separator: ", "))")
            } else {
                check.held += 1
            }
        }
        return check
    }
}
