import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncProtocol

/// The console's routes under `/admin`: sign-in and sign-out, the overview, the devices (with
/// token creation and revocation), a device's change sets, the refusals, a record's history
/// and reverts. Every page but sign-in needs a session (else `303` to `/admin/login`); every
/// form posts the session's CSRF token (else `403`, nothing done).
extension SyncHTTPServer {
    func addConsoleRoutes(to router: Router<RevSyncRequestContext>) {
        router.get("/admin/static/console.css") { _, _ in Console.asset(ConsoleAssets.stylesheet, type: "text/css; charset=utf-8") }
        router.get("/admin/static/console.js") { _, _ in Console.asset(ConsoleAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("/admin/login") { request, context in try await self.loginPage(request, context: context) }
        router.post("/admin/login") { request, context in try await self.signIn(request, context: context) }
        router.post("/admin/logout") { request, context in
            try await self.signedInForm(request, context: context) { current, _ in
                try await self.console.sessions.end(current)
                return Console.redirect(
                    "/admin/login", cookies: [self.console.sessions.cookie(ConsoleSessions.cookie, "", request: request, context: context)])
            }
        }
        router.get("/admin") { request, context in
            try await self.signedInPage(request, context: context) { current in try await self.overviewPage(current) }
        }
        router.get("/admin/devices") { request, context in
            try await self.signedInPage(request, context: context) { current in try await self.devicesPage(current, request: request) }
        }
        router.post("/admin/devices") { request, context in
            try await self.signedInForm(request, context: context) { current, form in try await self.createToken(current, form: form) }
        }
        router.get("/admin/devices/{id}") { request, context in
            try await self.signedInPage(request, context: context) { current in
                try await self.devicePage(current, id: context.parameters.require("id", as: Int64.self))
            }
        }
        router.get("/admin/devices/{id}/revoke") { request, context in
            try await self.signedInPage(request, context: context) { current in
                try await self.revokePage(current, id: context.parameters.require("id", as: Int64.self))
            }
        }
        router.post("/admin/devices/{id}/revoke") { request, context in
            try await self.signedInForm(request, context: context) { current, _ in
                try await self.revoke(current, id: context.parameters.require("id", as: Int64.self))
            }
        }
        router.get("/admin/refusals") { request, context in
            try await self.signedInPage(request, context: context) { current in try await self.refusalsPage(current) }
        }
        router.get("/admin/history") { request, context in
            try await self.signedInPage(request, context: context) { current in try await self.historyPage(current, request: request) }
        }
        router.get("/admin/revert") { request, context in
            try await self.signedInPage(request, context: context) { current in
                try await self.revertPage(current, revision: request.uri.queryParameters["revision"].flatMap { Int64(String($0)) })
            }
        }
        router.post("/admin/revert") { request, context in
            try await self.signedInForm(request, context: context) { current, form in
                try await self.revert(current, revision: form["revision"].flatMap { Int64($0) })
            }
        }
    }

    // MARK: Sessions

    /// Runs `body` for a signed-in request; sends anyone else to the sign-in page.
    private func signedInPage(
        _ request: Request, context: RevSyncRequestContext, _ body: (ConsoleSessions.Current) async throws -> Response
    ) async throws -> Response {
        guard let current = try await console.sessions.current(request) else { return Console.redirect("/admin/login") }
        context.record.authenticated(current.session.device)
        return try await body(current)
    }

    /// Runs `body` for a signed-in form post carrying the session's CSRF token.
    private func signedInForm(
        _ request: Request, context: RevSyncRequestContext, _ body: (ConsoleSessions.Current, FormFields) async throws -> Response
    ) async throws -> Response {
        guard let current = try await console.sessions.current(request) else { return Console.redirect("/admin/login") }
        context.record.authenticated(current.session.device)
        let form = try await FormFields.read(request, limit: 64 * 1024)
        guard let csrf = form["csrf"], csrf == current.session.csrf else {
            return message(
                current, status: .forbidden, heading: "Refused", kind: "error",
                text: "This form did not carry the session's CSRF token (it may be from an old page): nothing was done.", back: "/admin")
        }
        return try await body(current, form)
    }

    /// What every signed-in page shows: the navigation, the operator, the sign-out form.
    private func base(_ current: ConsoleSessions.Current, title: String, nav: String, refresh: Int? = nil) -> [String: Any] {
        var values: [String: Any] = [
            "title": title, "session": true, "csrf": current.session.csrf, "operator": current.session.device.name, "nav": [nav: true],
        ]
        if let refresh { values["refresh"] = refresh }
        return values
    }

    private func message(
        _ current: ConsoleSessions.Current, status: HTTPResponse.Status = .ok, heading: String, kind: String, text: String, back: String,
        backLabel: String = "Back"
    ) -> Response {
        var values = base(current, title: heading, nav: "")
        values["heading"] = heading
        values["kind"] = kind
        values["text"] = text
        values["back"] = back
        values["backLabel"] = backLabel
        return console.page("message", values, status: status)
    }

    private func loginPage(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        if try await console.sessions.current(request) != nil { return Console.redirect("/admin") }
        return freshLoginPage(request, context: context)
    }

    /// The sign-in form with a new CSRF token (also set as a cookie, which the post must match).
    private func freshLoginPage(
        _ request: Request, context: RevSyncRequestContext, error: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        let csrf = Token.generate()
        var values: [String: Any] = ["title": "Sign in", "loginCsrf": csrf]
        if let error { values["error"] = error }
        return console.page(
            "login", values, status: status,
            cookies: [console.sessions.cookie(ConsoleSessions.loginCookie, csrf, request: request, context: context)])
    }

    /// `POST /admin/login`: an admin token starts a session; anything else is a failed
    /// authentication (counted and logged like a wrong bearer token).
    private func signIn(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let form = try await FormFields.read(request, limit: 16 * 1024)
        guard let expected = request.cookies[ConsoleSessions.loginCookie]?.value, !expected.isEmpty, form["csrf"] == expected else {
            return freshLoginPage(request, context: context, error: "The sign-in form had expired. Try again.", status: .forbidden)
        }
        let token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let address = request.clientAddress(context, trustedProxies: configuration.trustedProxies)
        let device: Device
        do {
            var headers = HTTPFields()
            headers[.authorization] = "Bearer \(token)"
            device = try await authenticator.authenticate(headers: headers, clientAddress: address, path: "/admin/login").device
        } catch let error as APIError where error.status == .tooManyRequests {
            return freshLoginPage(request, context: context, error: error.message, status: .tooManyRequests)
        } catch let error as APIError where error.status == .unauthorized {
            return freshLoginPage(request, context: context, error: "Unknown or revoked token.", status: .unauthorized)
        }
        guard device.role == .admin else {
            _ = authenticator.failed(
                APIError.unauthorized("a \(device.role) token cannot sign in to the console"), address: address, path: "/admin/login")
            return freshLoginPage(
                request, context: context, error: "This token has the \(device.role) role: only admin tokens may sign in.",
                status: .unauthorized)
        }
        context.record.authenticated(device)
        let cookie = try await console.sessions.start(for: device, request: request, context: context)
        logger.info("console: signed in", metadata: ["device": "\(device.name)"])
        return Console.redirect(
            "/admin", cookies: [cookie, console.sessions.cookie(ConsoleSessions.loginCookie, "", request: request, context: context)])
    }

    // MARK: Overview

    private func overviewPage(_ current: ConsoleSessions.Current) async throws -> Response {
        let overview = try await loadOverview()
        let report = overview.report
        var values = base(current, title: "Overview", nav: "overview", refresh: 5)
        values["maxRevision"] = report.maxRevision
        values["live"] = overview.liveDevices
        values["devices"] = report.activeRows.count
        values["databaseSize"] = overview.databaseBytes.map(ConsoleFormat.bytes) ?? "unknown"
        if let snapshot = overview.snapshot {
            values["snapshot"] = [
                "revision": snapshot.revision,
                "age": ConsoleFormat.duration(report.now - Int64(snapshot.created.timeIntervalSince1970)),
            ]
        }
        let hints: [FleetReport.Currency: (String, String)] = [
            .current: ("current", "have the latest revision"),
            .behind: ("a little behind", "lack changes less than an hour old"),
            .farBehind: ("far behind", "lack changes an hour old or more"),
            .silent: ("silent", "lack changes and were not seen for a day"),
        ]
        values["currency"] = FleetReport.Currency.allCases.map { currency -> [String: Any] in
            let rows = report.activeRows.filter { $0.currency == currency }
            return [
                "key": currency.rawValue, "count": rows.count, "label": hints[currency]?.0 ?? currency.rawValue,
                "hint": hints[currency]?.1 ?? "",
                "devices": rows.map { row -> [String: Any] in
                    var device: [String: Any] = ["id": row.device.id, "name": row.device.name]
                    if row.behind > 0 {
                        device["detail"] = "\(row.behind) behind, seen \(ConsoleFormat.ago(row.activity?.lastSeen, now: report.now))"
                    }
                    return device
                },
            ]
        }
        values["chart"] = TrafficChart(minutes: overview.minutes).svg()
        values["syncs"] = overview.minutes.reduce(0) { $0 + $1.syncs }
        values["commits"] = overview.minutes.reduce(0) { $0 + $1.commits }
        values["refusals"] = overview.minutes.reduce(0) { $0 + $1.refusals }
        values["records"] = overview.records.map { ["entity": $0.entity, "count": $0.count] }
        return console.page("overview", values)
    }

    // MARK: Devices

    private static let deviceColumns: [(key: String, label: String, number: Bool)] = [
        ("name", "Name", false), ("user", "User", false), ("role", "Role", false), ("lastSeen", "Last seen", false),
        ("revision", "Revision", true), ("behind", "Behind", true), ("behindTime", "For", false), ("pending", "Pending", true),
        ("live", "Live", false), ("client", "Client", false), ("refusal", "Last refusal", false),
    ]

    private func devicesPage(_ current: ConsoleSessions.Current, request: Request) async throws -> Response {
        let report = try await FleetReport.load(from: engine.storage)
        let query = request.uri.queryParameters
        let sort = query["sort"].map(String.init).flatMap { key in Self.deviceColumns.first { $0.key == key }?.key } ?? "name"
        let descending = query["order"] == "desc"
        let rows = report.rows.sorted { first, second in
            let ordered = Self.ordered(first, second, by: sort)
            return descending ? Self.ordered(second, first, by: sort) : ordered
        }
        var values = base(current, title: "Devices", nav: "devices", refresh: 5)
        values["maxRevision"] = report.maxRevision
        values["sortLabel"] = (Self.deviceColumns.first { $0.key == sort }?.label ?? sort) + (descending ? ", descending" : "")
        values["columns"] = Self.deviceColumns.map { column -> [String: Any] in
            let active = column.key == sort
            return [
                "key": column.key, "label": column.label, "number": column.number, "active": active,
                "order": active && !descending ? "desc" : "asc", "arrow": descending ? "▼" : "▲",
            ]
        }
        values["rows"] = rows.map { row -> [String: Any] in
            var values: [String: Any] = [
                "id": row.device.id, "name": row.device.name, "user": row.device.user.map { String($0.rawValue) } ?? "",
                "role": row.device.role.rawValue, "lastSeen": ConsoleFormat.ago(row.activity?.lastSeen, now: report.now),
                "revision": row.revision, "behind": row.behind, "behindTime": row.behindSeconds.map(ConsoleFormat.duration) ?? "",
                "pending": row.activity?.pending.map(String.init) ?? "", "live": row.live,
                "clientVersion": row.activity?.clientVersion ?? "", "revoked": row.isRevoked, "currency": row.currency.rawValue,
            ]
            if let refusal = row.activity?.lastRefusal {
                values["lastRefusal"] = ["reason": refusal.reason.rawValue, "time": ConsoleFormat.ago(refusal.time, now: report.now)]
            }
            return values
        }
        values["roles"] = engine.schema.allRoles.map { ["name": $0.rawValue, "selected": $0 == .member] }
        values["hasUsers"] = engine.schema.users != nil
        return console.page("devices", values)
    }

    private static func ordered(_ first: FleetReport.Row, _ second: FleetReport.Row, by key: String) -> Bool {
        func compare<T: Comparable>(_ a: T, _ b: T) -> Bool { a == b ? first.device.id < second.device.id : a < b }
        switch key {
        case "user": return compare(first.device.user?.rawValue ?? -1, second.device.user?.rawValue ?? -1)
        case "role": return compare(first.device.role.rawValue, second.device.role.rawValue)
        case "lastSeen": return compare(first.activity?.lastSeen ?? 0, second.activity?.lastSeen ?? 0)
        case "revision": return compare(first.revision, second.revision)
        case "behind": return compare(first.behind, second.behind)
        case "behindTime": return compare(first.behindSeconds ?? 0, second.behindSeconds ?? 0)
        case "pending": return compare(first.activity?.pending ?? -1, second.activity?.pending ?? -1)
        case "live": return compare(first.live ? 1 : 0, second.live ? 1 : 0)
        case "client": return compare(first.activity?.clientVersion ?? "", second.activity?.clientVersion ?? "")
        case "refusal": return compare(first.activity?.lastRefusal?.time ?? 0, second.activity?.lastRefusal?.time ?? 0)
        default: return compare(first.device.name.lowercased(), second.device.name.lowercased())
        }
    }

    /// `POST /admin/devices`: a new token, shown once.
    private func createToken(_ current: ConsoleSessions.Current, form: FormFields) async throws -> Response {
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let role = Role(rawValue: form["role"] ?? "")
        let userText = (form["user"] ?? "").trimmingCharacters(in: .whitespaces)
        func refuse(_ text: String) -> Response {
            message(current, status: .badRequest, heading: "No token created", kind: "error", text: text, back: "/admin/devices")
        }
        guard !name.isEmpty, name.count <= 200 else { return refuse("Give the device a name (at most 200 characters).") }
        guard engine.schema.knows(role) else {
            return refuse("The role must be one of \(engine.schema.allRoles.map(\.rawValue).joined(separator: ", ")).")
        }
        var user: RecordID?
        if !userText.isEmpty {
            guard let id = Int64(userText), let users = engine.schema.users.flatMap(engine.schema.entity) else {
                return refuse("A user is the ID of a record of the schema's users entity.")
            }
            guard try await engine.storage.withReader({ try !$0.records(users, ids: [RecordID(id)]).isEmpty }) else {
                return refuse("There is no \(users.name) \(id).")
            }
            user = RecordID(id)
        }
        let (device, token) = try await Token.create(name: name, role: role, user: user, in: engine.storage)
        logger.info(
            "console: token created", metadata: ["device": "\(device.name)", "role": "\(role)", "by": "\(current.session.device.name)"])
        var values = base(current, title: "Token created", nav: "devices")
        values["name"] = device.name
        values["role"] = role.rawValue
        values["token"] = token
        return console.page("token", values)
    }

    private func devicePage(_ current: ConsoleSessions.Current, id: Int64) async throws -> Response {
        let report = try await FleetReport.load(from: engine.storage)
        guard let row = report.rows.first(where: { $0.device.id == id }) else {
            return message(
                current, status: .notFound, heading: "No such device", kind: "error", text: "There is no device \(id).",
                back: "/admin/devices")
        }
        let committed = try await RecordHistory(schema: engine.schema, storage: engine.storage).changeSets(device: id, limit: 50)
        let refused = try await engine.storage.withReader { try $0.refusals(device: id, limit: 50) }
        var items: [(time: Int64, values: [String: Any])] = committed.map { changeSet in
            let time = Int64(changeSet.time.timeIntervalSince1970)
            return (
                time,
                [
                    "time": ConsoleFormat.time(time), "outcome": "committed as revision \(changeSet.revision)", "kind": "committed",
                    "changeSet": changeSet.changeSetID ?? "", "records": ConsoleFormat.records(changeSet.records),
                    "revision": changeSet.revision,
                ]
            )
        }
        items += refused.map { refusal in
            (
                refusal.time,
                [
                    "time": ConsoleFormat.time(refusal.time), "outcome": "refused: \(refusal.reason.rawValue)", "kind": "refused",
                    "changeSet": refusal.changeSetID, "records": refusal.entries.map(ConsoleFormat.entry).joined(separator: "; "),
                ]
            )
        }
        var values = base(current, title: row.device.name, nav: "devices", refresh: 5)
        values["name"] = row.device.name
        values["role"] = row.device.role.rawValue
        if let user = row.device.user { values["user"] = user.rawValue }
        values["lastSeen"] = ConsoleFormat.ago(row.activity?.lastSeen, now: report.now)
        values["revision"] = row.revision
        values["behind"] = row.behind
        values["pending"] = row.activity?.pending.map(String.init) ?? "unknown"
        values["live"] = row.live
        values["clientVersion"] = row.activity?.clientVersion ?? "unknown"
        values["revoked"] = row.isRevoked
        values["changeSets"] = items.sorted { $0.time > $1.time }.prefix(50).map(\.values)
        return console.page("device", values)
    }

    private func revokePage(_ current: ConsoleSessions.Current, id: Int64) async throws -> Response {
        let records = try await engine.storage.withReader { try $0.allDevices() }
        guard let record = records.first(where: { $0.device.id == id }), record.revokedAt == nil else {
            return message(
                current, status: .notFound, heading: "Nothing to revoke", kind: "error", text: "There is no unrevoked device \(id).",
                back: "/admin/devices")
        }
        return confirmation(
            current, nav: "devices", heading: "Revoke the token of \(record.device.name)?",
            question:
                "The device can no longer sync or stream; what it has not sent stays on it. A revoked token cannot be restored: the device needs a new one.",
            action: "/admin/devices/\(id)/revoke", button: "Revoke", back: "/admin/devices")
    }

    /// A page asking to confirm an action: its form posts `action` (with `fields` and the
    /// session's CSRF token), or goes `back`.
    private func confirmation(
        _ current: ConsoleSessions.Current, nav: String, heading: String, question: String, details: [String] = [],
        action: String, fields: [String: String] = [:], button: String, back: String
    ) -> Response {
        var values = base(current, title: button, nav: nav)
        values["heading"] = heading
        values["question"] = question
        if !details.isEmpty { values["details"] = ["items": details] }
        values["action"] = action
        values["fields"] = fields.sorted { $0.key < $1.key }.map { ["name": $0.key, "value": $0.value] }
        values["button"] = button
        values["back"] = back
        return console.page("confirm", values)
    }

    private func revoke(_ current: ConsoleSessions.Current, id: Int64) async throws -> Response {
        guard id != current.session.device.id else {
            return message(
                current, status: .conflict, heading: "Not revoked", kind: "error",
                text: "This is the token you are signed in with: sign in with another admin token to revoke it.", back: "/admin/devices")
        }
        let revoked = try await engine.storage.withWriter { writer in try writer.transaction { try writer.revokeDevice(id: id) } }
        guard revoked else {
            return message(
                current, status: .notFound, heading: "Nothing revoked", kind: "error", text: "There is no unrevoked device \(id).",
                back: "/admin/devices")
        }
        logger.info("console: token revoked", metadata: ["device": "\(id)", "by": "\(current.session.device.name)"])
        return Console.redirect("/admin/devices")
    }

    // MARK: Refusals, history, revert

    private func refusalsPage(_ current: ConsoleSessions.Current) async throws -> Response {
        let (refusals, devices) = try await engine.storage.withReader { reader in
            (try reader.refusals(device: nil, limit: 200), try reader.allDevices())
        }
        let names = Dictionary(devices.map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
        var values = base(current, title: "Refusals", nav: "refusals", refresh: 5)
        let counts = Dictionary(grouping: refusals, by: \.reason.rawValue).mapValues(\.count)
        values["reasons"] = counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { ["reason": $0.key, "count": $0.value] }
        values["rows"] = refusals.map { refusal -> [String: Any] in
            [
                "time": ConsoleFormat.time(refusal.time), "deviceID": refusal.device,
                "device": names[refusal.device] ?? "device \(refusal.device)",
                "reason": refusal.reason.rawValue, "changeSet": refusal.changeSetID, "entries": refusal.entries.map(ConsoleFormat.entry),
            ]
        }
        return console.page("refusals", values)
    }

    private func historyPage(_ current: ConsoleSessions.Current, request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let entity = query["entity"].map(String.init)
        let idText = query["id"].map(String.init) ?? ""
        var values = base(current, title: "Record history", nav: "history")
        values["entities"] = engine.schema.entities.map { ["name": $0.name, "selected": $0.name == entity] }
        values["id"] = idText
        if let entity, engine.schema.entity(entity) != nil, let id = Int64(idText) {
            let changes = try await RecordHistory(schema: engine.schema, storage: engine.storage).changes(entity: entity, id: RecordID(id))
            values["searched"] = true
            values["changes"] = changes.reversed().map { change -> [String: Any] in
                var values: [String: Any] = [
                    "revision": change.revision, "time": ConsoleFormat.time(Int64(change.time.timeIntervalSince1970)),
                    "device": change.device,
                    "operation": change.operation.rawValue, "before": ConsoleFormat.values(change.before),
                    "after": ConsoleFormat.values(change.after),
                ]
                if let user = change.user { values["user"] = user.rawValue }
                return values
            }
        }
        return console.page("history", values)
    }

    private func revertPage(_ current: ConsoleSessions.Current, revision: Revision?) async throws -> Response {
        guard let revision,
            let (changeSet, entries) = try await engine.storage.withReader({ reader in
                try reader.loggedChangeSet(revision: revision).map { ($0, try reader.history(revision: revision)) }
            })
        else {
            return message(
                current, status: .notFound, heading: "No such change set", kind: "error", text: "No change set is at that revision.",
                back: "/admin")
        }
        return confirmation(
            current, nav: "history", heading: "Revert revision \(revision)?",
            question:
                "Committed \(ConsoleFormat.time(changeSet.committedAt)). The revert is a new change set every device receives; it is refused while a later change set touched the same records.",
            details: entries.map { "\($0.entity) #\($0.id.rawValue): \($0.operation.rawValue)" }, action: "/admin/revert",
            fields: ["revision": String(revision)], button: "Revert", back: "/admin/history")
    }

    private func revert(_ current: ConsoleSessions.Current, revision: Revision?) async throws -> Response {
        guard let revision else {
            return message(
                current, status: .badRequest, heading: "Nothing reverted", kind: "error", text: "No revision was given.",
                back: "/admin/history")
        }
        do {
            let result = try await engine.revert(.revision(revision))
            logger.info(
                "console: reverted a change set",
                metadata: ["reverted": "\(result.reverted)", "revision": "\(result.revision)", "by": "\(current.session.device.name)"])
            return message(
                current, heading: "Reverted", kind: "success",
                text:
                    "Revision \(result.reverted) was reverted as revision \(result.revision): \(result.recreated) records created again, \(result.restored) restored, \(result.deleted) deleted.",
                back: "/admin/history")
        } catch let refusal as ChangeSetRevert.Refusal {
            return message(
                current, status: .conflict, heading: "Not reverted", kind: "error", text: refusal.description, back: "/admin/history")
        }
    }
}
