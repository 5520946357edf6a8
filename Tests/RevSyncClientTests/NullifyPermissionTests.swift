import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A device judges a delete's `nullify` as the server does (the same evaluator): as the update
/// it is, by the reference's `write` rule and the record before and after. Refused locally,
/// nothing changes in the store and nothing is queued.
@Suite struct NullifyPermissionTests {
    @Test(arguments: StoreKind.all)
    func aDeviceRefusesANullifyItsRulesForbid(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store, schema: .nullifyCatalogue) { server in
                let admin = try await server.device("admin", role: .admin)
                let ann = try await admin.create("people", ["name": "Ann"]).id
                let category = try await admin.create("categories", ["name": "Tools", "owner_id": .integer(ann.rawValue)]).id
                let item = try await admin.create("items", ["name": "saw", "category_id": .integer(category.rawValue)]).id
                let device = try await server.clientDevice("ann", in: directory, user: ann)
                #expect(try await device.synchronizer.fetchDevice() == Actor(role: .member, user: ann))
                try await device.sync()
                let before = try await device.store.contents()

                let error = await #expect(throws: LocalStoreError.self) { try await device.table("categories").delete(category) }
                #expect(error?.code == .forbidden)
                #expect(error?.message.contains("would set its category_id to null, and category_id may be set only by admin") == true)
                #expect(try await device.store.contents() == before)
                #expect(try await device.store.pendingChangeSets().isEmpty)

                // A shelf that would leave Ann's reach with its category cleared.
                try await admin.sync([.new().deleting("items", item, base: try await server.revision())])
                _ = try await admin.create("shelves", ["category_id": .integer(category.rawValue)])
                try await device.sync()
                let moved = await #expect(throws: LocalStoreError.self) { try await device.table("categories").delete(category) }
                #expect(moved?.code == .forbidden)
                #expect(moved?.message.contains("which it would no longer meet with category_id set to null") == true)
                #expect(try await device.store.pendingChangeSets().isEmpty)
            }
        }
    }
}
