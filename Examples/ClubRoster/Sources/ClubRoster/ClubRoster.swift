import ClubRosterKit
import Foundation
import RevSyncClient

/// The club's roster, as an app would write it: generated types, plain GRDB, one change set per
/// write transaction.
///
///     ClubRoster --server http://127.0.0.1:8080 --token-file coach.token [--colleague-token-file medic.token] [--store roster.sqlite]
///
/// Creates a team with players (one with a photo), lists them through a `ValueObservation`,
/// edits one, syncs, and — given a colleague's token — shows the photo arriving on the
/// colleague's device and an edit the server refuses because the colleague changed the same
/// player first.
@main
struct ClubRoster {
    static func main() async {
        do {
            try await run(Options(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("ClubRoster: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        // As the app opens it at launch: the store on disk, or one started from the server's
        // snapshot with the device's token (here in a file; in the app, the Keychain).
        let tokens = FileTokenStore(path: options.tokenFile)
        let opened: ClubDatabase.Opened
        do {
            opened = try await ClubDatabase.openAtLaunch(
                directory: URL(fileURLWithPath: options.store).deletingLastPathComponent(), server: options.server, tokens: tokens)
        } catch ClubDatabaseError.wiped(let report) {
            return print("This device was wiped (\(report.records) records removed): ask your administrator to set it up again.")
        }
        let (store, synchronizer) = (opened.store, opened.synchronizer)
        do {
            _ = try await synchronizer.fetchDevice()
            try await synchronizer.sync()
        } catch let wiped as DeviceWiped {
            // Ordered since the last launch: the store is gone; so goes the token.
            try tokens.remove()
            return print("This device was wiped (\(wiped.report.records) records removed): ask your administrator to set it up again.")
        }

        // The roster, kept current by GRDB: local writes and syncs alike.
        let roster = ValueObservation.tracking(RosterLine.all().fetchAll)
        let printer = Task {
            for try await lines in roster.values(in: store.database) {
                print("Roster (\(lines.count)):")
                for line in lines { print("  \(line.description)") }
            }
        }
        defer { printer.cancel() }

        // A photo is an attachment: its bytes go into the store with the write, and travel
        // with the change set that refers to them.
        let photo = try Attachment.data(Self.portrait, type: "image/png", name: "ana.png")
        // One transaction, one change set: the team and its players, with temporary IDs.
        let ana = try await store.database.write { db in
            var team = Team(name: "U12 \(Int.random(in: 100...999))", ageGroup: "U12")
            try team.insert(db)
            var ana = Player(firstName: "Ana", lastName: "Lopez", position: "Midfielder", photo: photo)
            try ana.insert(db)
            var ben = Player(firstName: "Ben", lastName: "Okafor", position: "Defender")
            try ben.insert(db)
            _ = try TeamPlayer(teamID: team.id, playerID: ana.id, jerseyNumber: 8).inserted(db)
            _ = try TeamPlayer(teamID: team.id, playerID: ben.id, jerseyNumber: 4).inserted(db)
            return ana
        }
        try await pause()
        var report = try await synchronizer.sync()
        print("Synced: \(report.committed.count) change set(s) committed, \(report.attachmentsUploaded) photo(s) uploaded")
        let anaID = try await store.permanentID(of: ana.id) ?? ana.id

        // An edit: only the changed attribute travels, with Ana's revision.
        try await store.database.write { db in
            guard var player = try Player.fetchOne(db, id: anaID) else { return }
            player.position = "Forward"
            try player.update(db)
        }
        try await pause()
        report = try await synchronizer.sync()
        print("Synced: \(report.committed.count) change set(s) committed")

        // The app in front: live; sent to the background: one last sync, and the stream ends.
        let coordinator = await SyncCoordinator(synchronizer: synchronizer)
        await coordinator.sceneChanged(to: .active)
        print("In front: live \(await coordinator.isLive)")
        await coordinator.sceneChanged(to: .background)
        print("In the background: live \(await coordinator.isLive)")

        guard let colleagueToken = options.colleagueToken else { return }
        // A colleague changes Ana's position first...
        let colleague = try await openStore(at: options.store + ".colleague", server: options.server, token: colleagueToken)
        let colleagueSync = Synchronizer(store: colleague)
        try await colleagueSync.sync()
        if let received = try await colleague.database.read({ db in try Player.fetchOne(db, id: anaID)?.photo }) {
            let file = try await colleague.attachment(received)
            let bytes = try Data(contentsOf: file)
            print("The colleague's device shows Ana's photo: \(received.name ?? "?"), \(received.type), \(bytes.count) bytes")
        }
        try await colleague.database.write { db in
            _ = try Player.filter(id: anaID).updateAll(db, Player.Columns.position.set(to: "Goalkeeper"))
        }
        try await colleagueSync.sync()
        // ...and this device, which has not seen it, changes it too: the server refuses.
        try await store.database.write { db in
            _ = try Player.filter(id: anaID).updateAll(db, Player.Columns.position.set(to: "Winger"))
        }
        let waiting = try await store.database.read { db in
            try RowSyncState.filter(RowSyncState.Columns.entity == Player.databaseTableName).fetchAll(db)
        }
        print("Waiting to sync: \(waiting.filter(\.isPending).map { "players \($0.id)" })")
        report = try await synchronizer.sync()
        for conflict in report.conflicts {
            print("Refused (\(conflict.reason.rawValue)): \(conflict.entries.compactMap(\.message).joined(separator: "; "))")
        }
        let refused = try await store.database.read { db in try RowSyncState.filter(RowSyncState.Columns.refused == true).fetchAll(db) }
        print("Refused rows: \(refused.map { "\($0.entity) \($0.id)" })")
        try await pause()
        for conflict in try await store.conflicts() { try await store.dismissConflict(conflict.id) }
        try colleague.close()
        try store.close()
    }

    /// Opens the store, or creates it from the server's schema.
    static func openStore(at path: String, server: URL, token: String) async throws -> LocalStore {
        if FileManager.default.fileExists(atPath: path) { return try LocalStore.open(at: path) }
        let schema = try await Schema.fetch(from: server)
        return try LocalStore.create(at: path, schema: schema, server: .init(url: server, token: token))
    }

    /// A portrait: a 2×2 PNG.
    static let portrait = Data(
        base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==")!

    /// Lets the observation print before the next step.
    static func pause() async throws { try await Task.sleep(for: .milliseconds(200)) }
}

/// The command line.
struct Options {
    var server: URL
    var tokenFile: String
    var colleagueToken: String?
    /// The store's file: `roster.sqlite` in the folder of the app's data.
    var store = "roster.sqlite"

    init(_ arguments: ArraySlice<String>) throws {
        var values: [String: String] = [:]
        var iterator = arguments.makeIterator()
        while let key = iterator.next() {
            guard key.hasPrefix("--"), let value = iterator.next() else { throw UsageError() }
            values[String(key.dropFirst(2))] = value
        }
        guard let server = values["server"].flatMap(URL.init(string:)), let tokenFile = values["token-file"] else { throw UsageError() }
        self.server = server
        self.tokenFile = tokenFile
        colleagueToken = try values["colleague-token-file"].map {
            try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let store = values["store"] { self.store = store }
    }
}

struct UsageError: Error, CustomStringConvertible {
    var description: String {
        "usage: ClubRoster --server URL --token-file FILE [--colleague-token-file FILE] [--store PATH]"
    }
}
