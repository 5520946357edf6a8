import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the store and remember the server and token in it.",
        discussion: """
            The token is checked with the server first (GET /device): a wrong or revoked token creates nothing. The \
            schema comes from the server's GET /schema, or from --schema. Nothing is synced yet: run `revsync sync`.

            With --snapshot, the store starts from a snapshot file (revsync-server snapshot): it is checked (checksum, \
            integrity, the server's data set and schema version) before it becomes the store, and the first sync only \
            brings what changed since.

            With --download-snapshot, the snapshot comes from the server (GET /snapshot): the same checks, and an \
            interrupted download resumes where it stopped when the command is run again.
            """)

    @OptionGroup var options: StoreOptions

    @Option(help: "The server, such as http://127.0.0.1:8080.")
    var server: String

    @Option(
        help: """
            This device's token (revsync-server token create ...). Visible to other users in the process list: \
            prefer --token-file, REVSYNC_TOKEN, or the token on standard input.
            """)
    var token: String?

    @Option(help: "A file holding this device's token (its first line).")
    var tokenFile: String?

    @Option(help: "A schema file to use instead of fetching the server's.")
    var schema: String?

    @Option(
        help: """
            Pin the device to this schema version, as an app built for it is (GET /schema?version=V): the server \
            reads and answers it in that version, and syncs never upgrade it past it. Without it the store follows \
            the server's latest version.
            """)
    var schemaVersion: Int?

    @Option(help: "Start from this snapshot file (revsync-server snapshot) instead of an empty store.")
    var snapshot: String?

    @Option(help: "The snapshot's SHA-256 (default: the one in FILE.sha256 next to it, if any).")
    var sha256: String?

    @Flag(help: "Start from the server's snapshot (GET /snapshot); run again to resume an interrupted download.")
    var downloadSnapshot = false

    func validate() throws {
        if token != nil && tokenFile != nil { throw ValidationError("use --token or --token-file, not both") }
        if snapshot != nil && downloadSnapshot { throw ValidationError("use --snapshot FILE or --download-snapshot, not both") }
        if (snapshot != nil || downloadSnapshot) && schema != nil {
            throw ValidationError("a snapshot brings its own schema; leave out --schema")
        }
        if sha256 != nil && snapshot == nil { throw ValidationError("--sha256 goes with --snapshot FILE") }
        if let schemaVersion, schemaVersion < 1 { throw ValidationError("--schema-version is 1 or more") }
        if schemaVersion != nil && snapshot != nil {
            throw ValidationError("a snapshot file holds the schema version it was written for; leave out --schema-version")
        }
    }

    func run() async throws {
        try await reportingErrors {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw CommandFailure("\"\(server)\" is not an http(s) URL")
            }
            let token = try readToken()
            // A device set up again after a wipe: the old wipe's receipt goes first (the server
            // then refuses the old token), then the new token is checked, then the report goes.
            let wiped = LocalStore.wipeReport(at: options.store) != nil
            if wiped { try await sendPendingReceipt() }
            try await checkToken(url: url, token: token)
            if wiped {
                try await LocalStore.clearWipe(at: options.store)
                warn("\(options.store) was wiped; the device is set up again with the new token.")
            }
            if let snapshot { return try await bootstrap(from: snapshot, url: url, token: token) }
            if downloadSnapshot { return try await bootstrapFromServer(url: url, token: token) }
            let schema: Schema
            do {
                if let file = self.schema {
                    schema = try Schema(contentsOfFile: file)
                } else {
                    schema = try await Schema.fetch(from: url, version: schemaVersion)
                }
                if let schemaVersion, schema.version != schemaVersion {
                    throw CommandFailure("\(self.schema ?? "the schema") is version \(schema.version), not \(schemaVersion)")
                }
            } catch let error as SchemaError {
                throw CommandFailure("\(error)")
            } catch let failure as SyncFailure {
                throw CommandFailure("cannot fetch the schema from \(url.absoluteString): \(failure)")
            }
            let store = try LocalStore.create(at: options.store, schema: schema, server: .init(url: url, token: token))
            if let schemaVersion { try await store.pin(toSchemaVersion: schemaVersion) }
            try await learnDevice(store)
            try store.close()
            if options.json {
                say(
                    created(url: url, schemaVersion: schema.version, pinned: schemaVersion != nil))
            } else {
                say(
                    "Created \(options.store) for \(url.absoluteString) (schema version \(schema.version)\(schemaVersion != nil ? ", pinned" : ""), \(schema.entities.count) entities)."
                )
            }
        }
    }

    /// The receipt of the wipe of the store at this path, if the server has not had it: sent
    /// before anything else is done there.
    private func sendPendingReceipt() async throws {
        do {
            try await LocalStore.sendWipeReceipt(at: options.store)
        } catch let failure as SyncFailure where failure.status == 401 || failure.code == .notConfigured {
            // The server knows no such token (or the store never knew its server): nothing to receipt.
        } catch {
            throw CommandFailure(
                "\(options.store) was wiped, and its receipt must reach the server before the device is set up again: \(error); connect, and run this again"
            )
        }
    }

    /// Asks the server whose the token is before anything is created: a token it refuses
    /// (unknown, revoked) fails the command with nothing created. A server out of reach fails it
    /// too, unless the schema is given (`--schema`), for a store set up offline.
    private func checkToken(url: URL, token: String) async throws {
        do {
            _ = try await Synchronizer.fetchActor(from: .init(url: url, token: token))
        } catch let failure as SyncFailure where [401, 403, 410].contains(failure.status) {
            throw CommandFailure(
                "the server refused the token (\(failure.status ?? 0) \(failure.code): \(failure.message)); nothing was created. Ask its operator for a new one (revsync-server token create)."
            )
        } catch let failure as SyncFailure {
            guard schema != nil, failure.code == .network else {
                throw CommandFailure("cannot check the token with \(url.absoluteString): \(failure); nothing was created")
            }
            warn("could not reach \(url.absoluteString) to check the token (\(failure)); the first sync will check it.")
        }
    }

    /// Asks the server for this device's role and user (writes are checked against the
    /// schema's rules for them). If it cannot say now (the token was checked a moment ago, so
    /// the server went away), the store stays as it is, with a warning: the first sync asks again.
    private func learnDevice(_ store: LocalStore) async throws {
        do {
            try await Synchronizer(store: store).fetchDevice()
        } catch {
            warn("could not ask the server for this device's role (\(error)); the first sync will ask again.")
        }
    }

    private func warn(_ message: String) {
        FileHandle.standardError.write(Data("revsync: warning: \(message)\n".utf8))
    }

    /// The token from, in order: `--token`, `--token-file`, `REVSYNC_TOKEN`, standard input.
    private func readToken() throws -> String {
        let text: String
        if let token {
            text = token
        } else if let tokenFile {
            guard let contents = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                throw CommandFailure("cannot read the token file \(tokenFile)")
            }
            text = contents.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        } else if let variable = ProcessInfo.processInfo.environment["REVSYNC_TOKEN"] {
            text = variable
        } else {
            if isatty(STDIN_FILENO) != 0 { FileHandle.standardError.write(Data("Token: ".utf8)) }
            text = readLine(strippingNewline: true) ?? ""
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw CommandFailure("no token: give --token-file FILE, REVSYNC_TOKEN, the token on standard input, or --token")
        }
        return trimmed
    }

    private func bootstrap(from snapshot: String, url: URL, token: String) async throws {
        guard !FileManager.default.fileExists(atPath: options.store) else {
            throw CommandFailure("\(options.store) already exists; a store is never overwritten")
        }
        let identity: ServerIdentity
        do {
            identity = try await ServerIdentity.fetch(from: url)
        } catch {
            throw CommandFailure("cannot ask \(url.absoluteString) which data set it serves: \(error)")
        }
        let store = try LocalStore.bootstrap(
            at: options.store, from: snapshot, expectedSHA256: sha256, expecting: identity, server: .init(url: url, token: token))
        let status = try await store.status()
        let records = try await store.read { reader in try store.schema.entities.reduce(0) { $0 + (try reader.count($1.name)) } }
        try await learnDevice(store)
        try store.close()
        if options.json {
            say(
                created(
                    url: url, schemaVersion: identity.schemaVersion, snapshot: snapshot, maxRevision: status.maxRevision, records: records))
        } else {
            say(
                "Created \(options.store) for \(url.absoluteString) from \(snapshot): \(counted(records, "record")) at revision \(status.maxRevision); `revsync sync` brings what changed since."
            )
        }
    }

    private func bootstrapFromServer(url: URL, token: String) async throws {
        guard !FileManager.default.fileExists(atPath: options.store) else {
            throw CommandFailure("\(options.store) already exists; a store is never overwritten")
        }
        // The snapshot of the version the store is pinned to (none newer than the app's), or the
        // server's latest.
        let (store, downloaded) = try await LocalStore.bootstrap(
            at: options.store, downloadingFrom: .init(url: url, token: token), pinnedTo: schemaVersion)
        try await learnDevice(store)
        try store.close()
        guard let report = downloaded else { throw CommandFailure("\(options.store) appeared while the snapshot was downloading") }
        if options.json {
            say(
                created(
                    url: url, schemaVersion: store.schema.version, pinned: schemaVersion != nil, snapshot: "downloaded",
                    maxRevision: report.revision, records: report.records, gzipBytes: report.gzipBytes, receivedBytes: report.receivedBytes,
                    resumedAt: report.resumedAt))
        } else {
            let resumed = report.resumedAt > 0 ? ", resumed at byte \(report.resumedAt)" : ""
            say(
                "Created \(options.store) for \(url.absoluteString) from the server's snapshot: \(counted(report.records, "record")) at revision \(report.revision) (\(report.gzipBytes) bytes gzip\(resumed)); `revsync sync` brings what changed since."
            )
        }
    }

    /// The JSON report of a created store: the common members, and those its way of starting has.
    private func created(
        url: URL, schemaVersion: Int, pinned: Bool? = nil, snapshot: String? = nil, maxRevision: Revision? = nil, records: Int? = nil,
        gzipBytes: Int? = nil, receivedBytes: Int? = nil, resumedAt: Int? = nil
    ) -> String {
        struct Created: Encodable {
            var store: String
            var server: String
            var schemaVersion: Int
            // Present only where the way of starting has them (synthesized: absent ones are left out).
            var pinned: Bool?
            var snapshot: String?
            var maxRevision: Revision?
            var records: Int?
            var gzipBytes: Int?
            var receivedBytes: Int?
            var resumedAt: Int?
        }
        return JSONOutput.string(
            Created(
                store: options.store, server: url.absoluteString, schemaVersion: schemaVersion, pinned: pinned, snapshot: snapshot,
                maxRevision: maxRevision, records: records, gzipBytes: gzipBytes, receivedBytes: receivedBytes, resumedAt: resumedAt))
    }
}
