import Crypto
import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Attachments on devices: written with their records, uploaded before the change sets that
/// name them, downloaded after a sync or on demand, each transfer resuming where it broke off.
@Suite struct AttachmentSyncTests {
    static func bytes(_ count: Int, seed: Int = 1) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ seed) }) }

    /// Forwards requests, and breaks the attachment transfers asked: a `PUT` whose response is
    /// lost after the server kept it, a `GET` cut after `cutAfter` bytes.
    final class AttachmentFaults: SyncTransport, Sendable {
        let real = DefaultTransport()
        let losePuts = Locked(0)
        let cutDownloadsAfter = Locked<Int?>(nil)
        let sentBytes = Locked(0)
        let ranges = Locked<[String]>([])

        struct Cut: Error {}

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if request.method == "PUT" { sentBytes.withLock { $0 += request.body.count } }
            let response = try await real.send(request)
            if request.method == "PUT" {
                let lose = losePuts.withLock { left -> Bool in
                    guard left > 0 else { return false }
                    left -= 1
                    return true
                }
                if lose { throw URLError(.networkConnectionLost) }
            }
            return response
        }

        func download(
            _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
        ) async throws -> TransportResponse {
            ranges.withLock { $0.append(request.headers["Range"] ?? "") }
            guard request.url.path.contains("/attachments/"),
                let limit = cutDownloadsAfter.withLock({ cut -> Int? in
                    defer { cut = nil }
                    return cut
                })
            else { return try await real.download(request, receive: receive) }
            let got = Locked(0)
            return try await real.download(request) { head, bytes in
                let room = limit - got.current
                guard room > 0 else { throw Cut() }
                try receive(head, Array(bytes.prefix(room)))
                got.withLock { $0 += min(room, bytes.count) }
                if bytes.count > room { throw Cut() }
            }
        }
    }

    @Test func aPhotoTravelsWithItsRecordAndArrivesOnTheOtherDevice() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let laptop = try await server.clientDevice("laptop", in: directory)
                let photo = Self.bytes(2_500_000)
                let value = try Attachment.data(photo, type: "image/jpeg", name: "knee.jpg")
                let player = try await ipad.table("players").insert([
                    "first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value),
                ])
                // The bytes are the store's from the write on.
                #expect(ipad.store.hasAttachment(value))
                #expect(try Data(contentsOf: try await ipad.store.attachment(value)) == photo)

                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.attachmentsUploaded == 1 && report.attachmentBytesSent == 2_500_000)
                let permanent = try #require(try await ipad.store.permanentID(of: player))
                #expect(try await server.record("players", permanent)?["photo"] == .attachment(value))

                let received = try await laptop.sync()
                #expect(received.attachmentsMissing == 0)
                #expect(laptop.store.hasAttachment(value))
                let ana = try #require(try await laptop.table("players").find(permanent))
                #expect(ana.attachment("photo") == value)
                #expect(try Data(contentsOf: try await laptop.store.attachment(value)) == photo)
                // The same bytes again are not sent again.
                let again = try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Twin", "photo": .attachment(value)])
                _ = again
                #expect(try await ipad.sync().attachmentBytesSent == 0)
            }
        }
    }

    @Test func aGRDBWriteOfAnAttachmentColumnCopiesItsBytesAndTravels() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let source = directory.file("consent.pdf")
                try Self.bytes(40_000, seed: 5).write(to: URL(fileURLWithPath: source))
                let value = try Attachment.file(URL(fileURLWithPath: source))
                #expect(value.type == "application/pdf" && value.name == "consent.pdf")
                let player = try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await ipad.store.database.write { db in
                    try db.execute(sql: "UPDATE players SET photo = ? WHERE id = ?", arguments: [value, player])
                }
                #expect(ipad.store.hasAttachment(value))
                try FileManager.default.removeItem(atPath: source)  // the store's copy is what travels
                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.attachmentsUploaded == 1)
                let permanent = try #require(try await ipad.store.permanentID(of: player))
                #expect(try await server.record("players", permanent)?["photo"] == .attachment(value))
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func twoDevicesSyncingTheSameBytesAtOnceBothCommitEachWithItsOwnUpload(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store, schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let laptop = try await server.clientDevice("laptop", in: directory)
                let photo = Self.bytes(6_000_000, seed: 21)
                for device in [ipad, laptop] {
                    let value = try Attachment.data(photo, type: "image/jpeg")
                    try await device.table("players").insert(["first_name": "Same", "last_name": "Photo", "photo": .attachment(value)])
                }
                async let first = ipad.sync()
                async let second = laptop.sync()
                let (a, b) = try await (first, second)
                #expect(a.conflicts.isEmpty && b.conflicts.isEmpty && a.committed.count == 1 && b.committed.count == 1)
                // Each device's upload is its own: neither learns of the other's upload, or rides on
                // it (it proves it has the bytes by sending them), and neither sends a byte twice;
                // one that looks after the other's change set committed finds them readable.
                let size = Int64(photo.count)
                #expect(
                    a.attachmentBytesSent <= size && b.attachmentBytesSent <= size, "\(a.attachmentBytesSent), \(b.attachmentBytesSent)")
                #expect(a.attachmentBytesSent + b.attachmentBytesSent >= size)
            }
        }
    }

    /// The bytes vanish from the server between the device's upload and its change set (the
    /// retention deleted them, unreferenced): the refusal is `missing_attachment`, which the
    /// server keeps no outcome of; the device holds the bytes, so it uploads them again and sends
    /// the same change set in the same sync. Nothing is journaled, nothing dropped.
    @Test(arguments: StoreKind.all)
    func bytesThatVanishAfterTheUploadAreSentAgainWithTheSameChangeSet(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let storage = server.storage
                let files = server.database + "-attachments/objects/"
                let photo = Self.bytes(700_000, seed: 31)
                let value = try Attachment.data(photo, type: "image/jpeg")
                let vanish = BeforeFirstSyncTransport {
                    let deleted = try await storage.withWriter { writer in
                        try writer.transaction {
                            try writer.deleteAttachment(value.sha256, ifUnreferencedSince: .max, completedBefore: .max)
                        }
                    }
                    #expect(deleted)
                    try? FileManager.default.removeItem(atPath: files + value.sha256)
                }
                let ipad = try await server.clientDevice("ipad", in: directory, transport: vanish)
                let player = try await ipad.table("players").insert([
                    "first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value),
                ])
                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1, "\(report.conflicts)")
                #expect(report.retriedForAttachments.count == 1 && report.attachmentsUploaded == 2)
                #expect(report.attachmentBytesSent == Int64(photo.count) * 2)
                #expect(try await ipad.store.conflicts().isEmpty)
                #expect(try await ipad.store.pendingChangeSets().isEmpty)
                let permanent = try #require(try await ipad.store.permanentID(of: player))
                #expect(try await server.record("players", permanent)?["photo"] == .attachment(value))
                var served = 0
                try await AttachmentStore(storage: storage).forEachPart(of: value.sha256) { served += $0.count }
                #expect(served == photo.count)
            }
        }
    }

    @Test func aValueWithoutBytesOnTheDeviceIsRefusedAndNothingIsWritten() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let typed = try Attachment(sha256: String(repeating: "0f", count: 32), size: 3, type: "image/png")
                let refused = await #expect(throws: LocalStoreError.self) {
                    try await ipad.table("players").insert(["first_name": "A", "last_name": "B", "photo": .attachment(typed)])
                }
                #expect(refused?.code == .invalidValue)
                #expect(try await ipad.table("players").count() == 0)
                #expect(try await ipad.store.pendingChangeSets().isEmpty)
            }
        }
    }

    @Test func anUploadWhoseAnswerWasLostResumesAndSendsLittleTwice() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let faults = AttachmentFaults()
                let ipad = try await server.clientDevice("ipad", in: directory, transport: faults)
                let photo = Self.bytes(5_000_000, seed: 3)
                let value = try Attachment.data(photo, type: "image/jpeg")
                try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
                faults.losePuts.withLock { $0 = 2 }
                for _ in 0..<2 {
                    await #expect(throws: SyncFailure.self) { try await ipad.sync() }
                }
                #expect(try await ipad.store.pendingChangeSets().count == 1)
                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1)
                // Each lost answer's part was kept by the server: nothing was sent twice.
                #expect(faults.sentBytes.current == photo.count)
            }
        }
    }

    @Test func onDemandDownloadsWhenAskedWithProgressAndResumesACutDownload() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let faults = AttachmentFaults()
                let laptop = try await server.clientDevice("laptop", in: directory, transport: faults)
                let photo = Self.bytes(3_000_000, seed: 9)
                let value = try Attachment.data(photo, type: "image/png")
                try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
                try await ipad.sync()

                var configuration = Synchronizer.Configuration()
                configuration.attachments = .onDemand
                let lazy = Synchronizer(store: laptop.store, transport: faults, configuration: configuration)
                let report = try await lazy.sync()
                #expect(report.attachmentsMissing == 1 && !laptop.store.hasAttachment(value))
                #expect(try await laptop.store.missingAttachments() == [value])

                faults.cutDownloadsAfter.withLock { $0 = 1_000_000 }
                await #expect(throws: (any Error).self) { try await laptop.store.attachment(value, transport: faults) }
                let seen = Locked<[Int64]>([])
                let url = try await laptop.store.attachment(
                    value, progress: { have, _ in seen.withLock { $0.append(have) } }, transport: faults)
                #expect(try Data(contentsOf: url) == photo)
                #expect(faults.ranges.current.last == "bytes=1000000-")
                #expect(seen.current.first ?? 0 > 1_000_000 && seen.current.last == 3_000_000)
                #expect(try await laptop.store.missingAttachments().isEmpty)
            }
        }
    }

    @Test func theFleetSeesWhichDevicesLackFilesAndCountsThemBehind() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let admin = try await server.device("admin", role: .admin)
                let ipad = try await server.clientDevice("ipad", in: directory)
                let laptop = try await server.clientDevice("laptop", in: directory)
                let value = try Attachment.data(Self.bytes(5000), type: "image/png")
                try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
                try await ipad.sync()
                var configuration = Synchronizer.Configuration()
                configuration.attachments = .onDemand
                let lazy = Synchronizer(store: laptop.store, configuration: configuration)
                try await lazy.sync()
                try await lazy.sync()  // tells the server what the last one left it lacking
                try await ipad.sync()

                func fleet() async throws -> [String: [String: Any]] {
                    try await #require(server.http).activity.flush()
                    let response = try await server.send("GET", "/admin/api/devices", headers: [("Authorization", "Bearer \(admin.token)")])
                    let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                    let devices = try #require(json["devices"] as? [[String: Any]])
                    return Dictionary(devices.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
                }
                var devices = try await fleet()
                #expect(devices["laptop"]?["missingAttachments"] as? Int == 1)
                #expect(devices["laptop"]?["behind"] as? Int == 0 && devices["laptop"]?["currency"] as? String == "behind")
                #expect(devices["ipad"]?["missingAttachments"] as? Int == 0)

                _ = try await laptop.store.attachment(value)
                try await lazy.sync()
                try await lazy.sync()
                devices = try await fleet()
                #expect(devices["laptop"]?["missingAttachments"] as? Int == 0 && devices["laptop"]?["currency"] as? String == "current")
            }
        }
    }

    @Test func filesNoRecordNamesAreRemovedWhenTheStoreOpens() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let kept = try Attachment.data(Self.bytes(1000, seed: 1), type: "image/png")
                let dropped = try Attachment.data(Self.bytes(1000, seed: 2), type: "image/png")
                try await ipad.table("players").insert(["first_name": "A", "last_name": "B", "photo": .attachment(kept)])
                // A write that copied its bytes, then failed: rolled back, the file stays for now.
                struct Abort: Error {}
                await #expect(throws: Abort.self) {
                    try await ipad.store.write { transaction in
                        try transaction.insert(into: "players", ["first_name": "C", "last_name": "D", "photo": .attachment(dropped)])
                        throw Abort()
                    }
                }
                #expect(ipad.store.hasAttachment(dropped))
                let path = ipad.store.path
                try ipad.store.close()
                // Old enough to be nobody's write in progress.
                let file = path + "-attachments/" + dropped.sha256
                try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: file)
                let reopened = try LocalStore.open(at: path)
                #expect(reopened.hasAttachment(kept) && !reopened.hasAttachment(dropped))
                try reopened.close()
            }
        }
    }
}
