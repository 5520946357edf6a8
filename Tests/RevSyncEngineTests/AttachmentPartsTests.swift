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
}
