import Foundation
import GRDB
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// The data-protection class of a store's files (Apple platforms): which class a store keeps and
/// which files get it. Linux has no classes (the call that sets one is compiled for Apple
/// platforms only, and no Apple device runs these tests), so this checks the choice and the
/// files it covers; the files' privacy on Linux is `PrivateStoreTests`'.
@Suite struct FileProtectionTests {
    /// A new store keeps the default (`completeUntilFirstUserAuthentication`, so background
    /// syncs run on a locked device); `complete` is kept across a close and an open.
    @Test func theClassIsKeptInTheStoreAcrossOpens() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            let store = try LocalStore.create(at: path, schema: .demo)
            #expect(store.fileProtection == .completeUntilFirstUserAuthentication)
            try await store.setFileProtection(.complete)
            #expect(store.fileProtection == .complete)
            try store.close()
            let reopened = try LocalStore.open(at: path)
            #expect(reopened.fileProtection == .complete)
            #expect(StoreFileProtection.complete.fileProtectionType == .complete)
            #expect(StoreFileProtection.completeUntilFirstUserAuthentication.fileProtectionType == .completeUntilFirstUserAuthentication)
            try reopened.close()
        }
    }

    /// A class this version does not know (written by a newer one, or by hand) is not a reason
    /// to refuse the store: it opens with the default.
    @Test func anUnknownKeptClassOpensWithTheDefault() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            try LocalStore.create(at: path, schema: .demo).close()
            let pool = try StoreFile.openPool(path)
            try pool.write { db in try StoreStateTable(db: db).set(.fileProtection, "none") }
            try pool.close()
            let store = try LocalStore.open(at: path)
            #expect(store.fileProtection == .completeUntilFirstUserAuthentication)
            try store.close()
        }
    }

    /// The class covers every file the store holds data in: the store, its `-wal` and `-shm`,
    /// the attachments folder (new files inherit it), its files and partial downloads.
    @Test func everyFileOfTheStoreIsCovered() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            let store = try LocalStore.create(at: path, schema: .attachments)
            let photo = try Attachment.data(Data(repeating: 7, count: 4096), type: "image/jpeg")
            try await store.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(photo)])
            let covered = Set(store.files.dataPaths())
            for expected in [
                path, path + "-wal", path + "-shm", path + "-attachments", path + "-attachments/partial",
                path + "-attachments/" + photo.sha256,
            ] {
                #expect(covered.contains(expected), "\(expected) is not given the class: \(covered.sorted())")
            }
            try store.close()
        }
    }

    /// The class is given (not only listed): every file of the store that holds data gets the
    /// store's class when the store opens, and a snapshot download (which holds the whole data
    /// set, compressed) when it is made. Recorded where the platform has no classes.
    @Test func theStoresClassIsGivenToEveryFileIncludingASnapshotDownload() async throws {
        StoreFileProtection.applied.withLock { if $0 == nil { $0 = [:] } }
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let maker = try await server.clientDevice("maker", in: directory)
                let photo = try Attachment.data(Data(repeating: 3, count: 2048), type: "image/jpeg")
                try await maker.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(photo)])
                try await maker.sync()
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.store.setFileProtection(.complete)
                let report = try await tablet.sync()
                #expect(report.startedFromSnapshot != nil)
                let given = StoreFileProtection.applied.current ?? [:]
                let path = tablet.store.path
                for file in [path, path + "-wal", path + "-shm", path + ".snapshot.gz", path + ".snapshot.gz.json", path + "-attachments"] {
                    #expect(given[file] == .complete, "\(file) was not given the store's class: \(given[file].map(\.rawValue) ?? "none")")
                }
                // Files made in the folders since inherit the folders' class; the next open gives
                // it to every data file there is.
                try tablet.store.close()
                let reopened = try LocalStore.open(at: path)
                let now = StoreFileProtection.applied.current ?? [:]
                for file in reopened.files.dataPaths() {
                    #expect(now[file] == .complete, "\(file) was not given the store's class")
                }
                try reopened.close()
            }
        }
    }
}
