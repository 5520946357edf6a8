import Crypto
import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// An attachment's bytes through the store on either backend: every byte value intact (on
/// PostgreSQL the parts travel as binary parameters and results, not hexadecimal), parts of
/// their full size, an upload broken off kept to its last byte and resumed from there.
@Suite struct AttachmentPartsTests {
    /// 9 MiB and 3 bytes in which every byte value occurs many times.
    static let photo: [UInt8] = (0..<(9 << 20) + 3).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) }
    static let digest = Hex.encode(SHA256.hash(data: photo))

    @Test(arguments: StoreKind.all)
    func everyByteComesBackAfterAnUploadBrokenOffAndResumed(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: .attachments) { server in
            let attachments = AttachmentStore(storage: server.storage)
            let (device, _) = try await Token.create(name: "ipad", role: .member, in: server.storage)
            let total = Int64(Self.photo.count)
            // The first request breaks off after 5 MiB and 7 bytes, mid-part.
            let cut = (5 << 20) + 7
            let first = try #require(try await attachments.beginUpload(Self.digest, start: 0, total: total, device: device.id))
            for chunk in stride(from: 0, to: cut, by: 65_536) { try await first.write(Self.photo[chunk..<min(chunk + 65_536, cut)]) }
            await first.abandon()
            #expect(try await attachments.progress(Self.digest, of: device.id) == .partial(received: Int64(cut)))
            // The device resumes where the server says, and finishes.
            let second = try #require(try await attachments.beginUpload(Self.digest, start: Int64(cut), total: total, device: device.id))
            for chunk in stride(from: cut, to: Self.photo.count, by: 65_536) {
                try await second.write(Self.photo[chunk..<min(chunk + 65_536, Self.photo.count)])
            }
            #expect(try await second.finish() == .complete(size: total))
            var served: [UInt8] = []
            try await attachments.forEachPart(of: Self.digest) { served += $0 }
            #expect(served.count == Self.photo.count)
            #expect(served == Self.photo)
            if store == .postgres {
                // Kept in parts of up to 4 MiB: the first request's whole part, its rest, then the second's.
                let stored = try #require(try await attachments.complete(Self.digest))
                let parts = try await attachments.parts(of: Self.digest, owner: stored.partsOwner)
                #expect(parts.map(\.length).reduce(0, +) == total)
                #expect(parts.allSatisfy { $0.length <= 4 << 20 } && parts.first?.length == 4 << 20)
            }
        }
    }

    /// Uploads whose requests are under way at once each count the ones that began before them
    /// whole, not the bytes they have written so far: three uploads of 12,000 bytes begun at
    /// once by one token pass no quota of 30,000 (before, all three began: 36,000), and the
    /// server-wide limit counts another token's upload under way the same way.
    @Test(arguments: StoreKind.all)
    func uploadsBegunAtOnceReserveTheirWholeSize(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: .attachments) { server in
            var limits = AttachmentStore.Limits()
            limits.unreferencedBytesPerToken = 30_000
            limits.unreferencedBytes = 40_000
            let attachments = AttachmentStore(storage: server.storage, limits: limits)
            let (alice, _) = try await Token.create(name: "alice", role: .member, in: server.storage)
            let (bob, _) = try await Token.create(name: "bob", role: .member, in: server.storage)
            let files = (1...4).map { seed in (0..<12_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) } }
            let digests = files.map { Hex.encode(SHA256.hash(data: $0)) }
            let first = try #require(try await attachments.beginUpload(digests[0], start: 0, total: 12_000, device: alice.id))
            let second = try #require(try await attachments.beginUpload(digests[1], start: 0, total: 12_000, device: alice.id))
            await #expect(throws: AttachmentStore.UploadRefusal.tokenQuota(limit: 30_000)) {
                _ = try await attachments.beginUpload(digests[2], start: 0, total: 12_000, device: alice.id)
            }
            // Everyone's: alice's 24,000 under way and bob's 12,000 fit 40,000; a second of bob's does not.
            let bobs = try #require(try await attachments.beginUpload(digests[2], start: 0, total: 12_000, device: bob.id))
            await #expect(throws: AttachmentStore.UploadRefusal.serverFull(limit: 40_000)) {
                _ = try await attachments.beginUpload(digests[3], start: 0, total: 12_000, device: bob.id)
            }
            // Once the first is complete and the second broke off after 1,000 bytes, alice has
            // 13,000 bytes unreferenced: a third of 12,000 fits again (bob's under way ended too).
            try await first.write(files[0])
            #expect(try await first.finish() == .complete(size: 12_000))
            try await second.write(files[1][0..<1_000])
            await second.abandon()
            await bobs.abandon()
            let third = try #require(try await attachments.beginUpload(digests[3], start: 0, total: 12_000, device: alice.id))
            await third.abandon()
        }
    }
}
