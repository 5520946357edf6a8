import Foundation
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// The devices: the list, a token's creation and revocation, one device's page.
extension ConsoleController {
    struct TokenForm: Decodable {
        var name: String?
        var role: String?
        var user: String?
    }

    static let deviceColumns: [(key: String, label: String, number: Bool)] = [
        ("name", "Device", false), ("user", "User", false), ("role", "Role", false), ("lastSeen", "Last seen", false),
        ("revision", "Revision", true), ("behind", "Behind", true), ("behindTime", "For", false), ("pending", "Pending", true),
        ("live", "Live", false), ("verified", "Verified", false), ("client", "Client", false),
        ("refusal", "Last refusal", false),
    ]

    /// The devices page's filter (`?name=&role=&currency=`): a part of the name (any case), a
    /// role, a currency, `attention` (``FleetAttention``) or `revoked`. Without a currency,
    /// revoked tokens are listed too; with one, only those it names.
    struct DeviceFilter {
        var name = ""
        var role: String?
        var currency: String?
        /// The schema version the devices last spoke.
        var version: Int?

        init(_ query: [String: String], schema: Schema) {
            version = query["version"].flatMap { Int($0) }.flatMap { (1...1_000_000).contains($0) ? $0 : nil }
            name = String((query["name"] ?? "").trimmingCharacters(in: .whitespaces).prefix(200))
            role = query["role"].flatMap { role in schema.allRoles.contains { $0.rawValue == role } ? role : nil }
            currency = query["currency"].flatMap { value in
                ConsoleController.currencyFilters.contains { $0.value == value } ? value : nil
            }
        }

        var isEmpty: Bool { name.isEmpty && role == nil && currency == nil && version == nil }

        /// `&name=…&role=…&currency=…&version=…`, for the links that keep it.
        var query: String {
            [("name", name.isEmpty ? nil : name), ("role", role), ("currency", currency), ("version", version.map(String.init))]
                .compactMap { key, value in
                    value.map { "&\(key)=\(ConsoleController.queryValue($0))" }
                }.joined()
        }

        func admits(_ row: FleetReport.Row, attention: Set<Int64>) -> Bool {
            if !name.isEmpty, row.device.name.range(of: name, options: [.caseInsensitive, .diacriticInsensitive]) == nil { return false }
            if let role, row.device.role.rawValue != role { return false }
            if let version, row.activity?.schemaVersion != version { return false }
            switch currency {
            case nil: return true
            case "revoked": return row.isRevoked
            case "attention": return !row.isRevoked && attention.contains(row.device.id)
            case let currency? where row.isWiped: return row.currency.rawValue == currency
            case let currency?: return !row.isRevoked && row.currency.rawValue == currency
            }
        }
    }

    /// The currency filter's choices, in the order the select offers them.
    static let currencyFilters: [(value: String, label: String)] =
        [("attention", "needs attention")] + FleetReport.Currency.allCases.map { ($0.rawValue, currencyLabels[$0]?.label ?? $0.rawValue) }
        + [("revoked", "revoked")]

    /// The devices one page lists.
    static let devicesPerPage = 50

    func devicesPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        await activity.flushBeforeReading()
        let report = try await FleetReport.load(
            from: engine.storage, schema: engine.schema, leaseDays: configuration.offlineLeaseDays(engine.lineage))
        let query = Self.formQuery(request)
        let filter = DeviceFilter(query, schema: engine.schema)
        let attention =
            filter.currency == "attention"
            ? FleetAttention(report: report, unhandledRefusals: try await engine.storage.withReader { try $0.unhandledRefusalCounts() })
                .deviceIDs : []
        let sort = query["sort"].flatMap { key in Self.deviceColumns.first { $0.key == key }?.key } ?? "name"
        let descending = query["order"] == "desc"
        let rows = report.rows.filter { filter.admits($0, attention: attention) }.sorted { first, second in
            descending
                ? Self.ordered(second, first, by: sort, names: report.userNames)
                : Self.ordered(first, second, by: sort, names: report.userNames)
        }
        let noun = report.rows.count == 1 ? "device" : "devices"
        // At most a page of devices at once (a fleet of 200 was a page 59,000 px tall).
        let pages = max(1, (rows.count + Self.devicesPerPage - 1) / Self.devicesPerPage)
        let pageNumber = min(max(1, query["page"].flatMap { Int($0) } ?? 1), pages)
        let shownRows = rows.dropFirst((pageNumber - 1) * Self.devicesPerPage).prefix(Self.devicesPerPage)
        let sortQuery = "sort=\(sort)&order=\(descending ? "desc" : "asc")"
        func pageURL(_ number: Int) -> String { "/admin/devices?\(sortQuery)\(filter.query)&page=\(number)" }
        let page = DevicesPage(
            chrome: chrome(context, .devices), maxRevision: report.maxRevision,
            sortLabel: (Self.deviceColumns.first { $0.key == sort }?.label ?? sort) + (descending ? ", descending" : ""),
            columns: Self.deviceColumns.map { column in
                let active = column.key == sort
                let order = active && !descending ? "desc" : "asc"
                return DevicesPage.Column(
                    key: column.key, label: column.label, number: column.number, active: active, order: order,
                    arrow: descending ? "▼" : "▲", url: "/admin/devices?sort=\(column.key)&order=\(order)" + filter.query)
            },
            rows: shownRows.map { row in deviceRow(row, report: report) },
            roles: engine.schema.allRoles.map { DevicesPage.RoleOption(name: $0.rawValue, selected: $0 == .member) },
            hasUsers: engine.schema.users != nil, nameFilter: filter.name,
            roleFilters: [DevicesPage.FilterOption(value: "", label: "any", selected: filter.role == nil)]
                + engine.schema.allRoles.map {
                    DevicesPage.FilterOption(value: $0.rawValue, label: $0.rawValue, selected: $0.rawValue == filter.role)
                },
            currencyFilters: [DevicesPage.FilterOption(value: "", label: "any", selected: filter.currency == nil)]
                + Self.currencyFilters.map {
                    DevicesPage.FilterOption(value: $0.value, label: $0.label, selected: $0.value == filter.currency)
                },
            shown: filter.isEmpty ? "\(report.rows.count) \(noun)" : "\(rows.count) of \(report.rows.count) \(noun) match the filter",
            filtered: !filter.isEmpty,
            versionFilters: [DevicesPage.FilterOption(value: "", label: "any", selected: filter.version == nil)]
                + engine.lineage.versions.map(\.version).reversed().map {
                    DevicesPage.FilterOption(value: String($0), label: "v\($0)", selected: $0 == filter.version)
                },
            paging: pages == 1
                ? nil
                : DevicesPage.Paging(
                    range:
                        "\((pageNumber - 1) * Self.devicesPerPage + 1)–\((pageNumber - 1) * Self.devicesPerPage + shownRows.count) of \(rows.count)",
                    previous: pageNumber > 1 ? pageURL(pageNumber - 1) : nil, next: pageNumber < pages ? pageURL(pageNumber + 1) : nil,
                    pages: (1...pages).map { DevicesPage.PageLink(number: $0, url: pageURL($0), current: $0 == pageNumber) }))
        return renderer.response(page)
    }

    private func deviceRow(_ row: FleetReport.Row, report: FleetReport) -> DevicesPage.Row {
        let neverSynced = row.currency == .neverSynced
        return DevicesPage.Row(
            id: row.device.id, name: row.device.name, user: Self.userName(row.device.user, names: report.userNames),
            role: row.device.role.rawValue,
            lastSeen: ConsoleFormat.ago(row.activity?.lastSeen, now: report.now), revision: neverSynced ? "–" : String(row.revision),
            behind: neverSynced ? "never synced" : String(row.behind) + Self.lacking(row),
            behindTime: row.behindSeconds.map(ConsoleFormat.duration) ?? "–",
            pending: row.activity?.pending.map(String.init) ?? "–", live: row.live, clientVersion: Self.client(row.activity),
            lastRefusal: row.activity?.lastRefusal.map { refusal in
                DevicesPage.Refusal(reason: refusal.reason.rawValue, time: ConsoleFormat.ago(refusal.time, now: report.now))
            }, revoked: row.isRevoked, wipe: row.record.wipe.map { $0.receipt == nil ? "wipe pending" : "wiped" },
            currency: row.currency.rawValue,
            verified: Self.verification(row, report: report), repaired: Self.repair(row, now: report.now),
            differs: row.unresolvedMismatch.map { "differs, found \(ConsoleFormat.ago($0, now: report.now))" },
            holdsErased: row.holdsErasures.isEmpty || row.isRevoked
                ? nil
                : "holds erased data (erasure\(row.holdsErasures.count == 1 ? "" : "s") \(row.holdsErasures.map(String.init).joined(separator: ", ")))"
        )
    }

    /// `at the latest`, `revision 812, 3 hours ago` or `never`: the last revision at which the
    /// device's records were proven equal to the server's.
    static func verification(_ row: FleetReport.Row, report: FleetReport) -> String {
        if let wipe = row.record.wipe { return wipe.pending ? "wipe pending: nothing proven since the order" : "wiped: it holds nothing" }
        guard let revision = row.activity?.verifiedRevision else { return "never" }
        if row.verifiedCurrent(maxRevision: report.maxRevision) { return "at the latest" }
        return "revision \(revision), \(ConsoleFormat.ago(row.activity?.verifiedAt, now: report.now))"
    }

    /// `repaired 3 records 2 hours ago (5 in all)`: the device's last repair, and every record
    /// repairs moved to it.
    static func repair(_ row: FleetReport.Row, now: Int64) -> String? {
        guard let activity = row.activity, activity.repairs > 0, let records = activity.repairedRecords, let at = activity.repairedAt
        else { return nil }
        let all = activity.repairs == records ? "" : " (\(activity.repairs) in all)"
        return "repaired \(records) record\(records == 1 ? "" : "s") \(ConsoleFormat.ago(at, now: now))\(all)"
    }

    /// `, lacks 3 files`: the attachments a device said it lacked after its last sync.
    static func lacking(_ row: FleetReport.Row) -> String {
        guard let missing = row.activity?.missingAttachments, missing > 0 else { return "" }
        return ", lacks \(missing) file\(missing == 1 ? "" : "s")"
    }

    /// A device's user as a person reads it: the user's name, else `user 7`.
    static func userName(_ user: RecordID?, names: [RecordID: String]) -> String? {
        user.map { names[$0] ?? "user \($0.rawValue)" }
    }

    private static func ordered(_ first: FleetReport.Row, _ second: FleetReport.Row, by key: String, names: [RecordID: String]) -> Bool {
        func compare<T: Comparable>(_ a: T, _ b: T) -> Bool { a == b ? first.device.id < second.device.id : a < b }
        func user(_ row: FleetReport.Row) -> String { userName(row.device.user, names: names) ?? "" }
        switch key {
        case "user": return compare(user(first).lowercased(), user(second).lowercased())
        case "role": return compare(first.device.role.rawValue, second.device.role.rawValue)
        case "lastSeen": return compare(first.activity?.lastSeen ?? 0, second.activity?.lastSeen ?? 0)
        case "revision": return compare(first.revision, second.revision)
        case "behind": return compare(first.behind, second.behind)
        case "behindTime": return compare(first.behindSeconds ?? 0, second.behindSeconds ?? 0)
        case "pending": return compare(first.activity?.pending ?? -1, second.activity?.pending ?? -1)
        case "live": return compare(first.live ? 1 : 0, second.live ? 1 : 0)
        case "verified": return compare(first.activity?.verifiedRevision ?? -1, second.activity?.verifiedRevision ?? -1)
        case "client": return compare(first.activity?.clientVersion ?? "", second.activity?.clientVersion ?? "")
        case "refusal": return compare(first.activity?.lastRefusal?.time ?? 0, second.activity?.lastRefusal?.time ?? 0)
        default: return compare(first.device.name.lowercased(), second.device.name.lowercased())
        }
    }

    /// `POST /admin/devices`: a new token, shown once.
    func createToken(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = (try? await request.decode(as: TokenForm.self, context: context)) ?? TokenForm()
        let name = (form.name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let role = Role(rawValue: form.role ?? "")
        let userText = (form.user ?? "").trimmingCharacters(in: .whitespaces)
        func refuse(_ text: String) -> Response {
            message(context, status: .badRequest, heading: "No token created", kind: .error, text: text, back: "/admin/devices")
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
        let device: Device
        let token: String
        do {
            (device, token) = try await Token.create(name: name, role: role, user: user, in: engine.storage)
        } catch let taken as Token.NameTaken {
            return refuse(
                "A device named “\(taken.name.prefix(80))” has a token that is not revoked: choose another name, or revoke that token first."
            )
        }
        logger.info(
            "console: token created",
            metadata: ["device": "\(device.name)", "role": "\(role)", "by": "\(context.session.session.device.name)"])
        return renderer.response(TokenPage(chrome: chrome(context, .devices), name: device.name, role: role.rawValue, token: token))
    }

    func devicePage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameters.require("id", as: Int64.self)
        let before = request.uri.queryParameters["before"].flatMap { Int64(String($0)) }
        await activity.flushBeforeReading()
        let report = try await FleetReport.load(
            from: engine.storage, schema: engine.schema, leaseDays: configuration.offlineLeaseDays(engine.lineage))
        guard let row = report.rows.first(where: { $0.device.id == id }) else {
            return message(
                context, status: .notFound, heading: "No such device", kind: .error, text: "There is no device \(id).",
                back: "/admin/devices")
        }
        let refusalLimit = 20
        let (refused, names) = try await engine.storage.withReader { reader in
            (
                try reader.refusals(device: id, limit: refusalLimit, handled: true),
                Dictionary(try reader.allDevices().map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
            )
        }
        let committed = try await RecordHistory(schema: engine.schema, storage: engine.storage).changeSets(
            device: id, before: before, limit: 20, records: 3)
        let here = "/admin/devices/\(id)"
        let state: String =
            switch row.currency {
            case .neverSynced: "never synced"
            case .current: "current"
            case .wipePending: "wipe pending"
            case .wiped: "wiped"
            default: "\(row.behind) behind" + Self.lacking(row)
            }
        let page = DevicePage(
            title: row.device.name, chrome: chrome(context, .devices), id: id, name: row.device.name, role: row.device.role.rawValue,
            user: Self.userName(row.device.user, names: report.userNames),
            lastSeen: ConsoleFormat.ago(row.activity?.lastSeen, now: report.now),
            revision: row.currency == .neverSynced ? "–" : String(row.revision), state: state,
            pending: row.activity?.pending.map(String.init) ?? "unknown", live: row.live,
            clientVersion: Self.client(row.activity, unknown: "unknown", refusalApart: true),
            lease: row.leaseEndsAt.map { ends in
                ends > report.now
                    ? "ends in \(ConsoleFormat.duration(ends - report.now))"
                    : "ended \(ConsoleFormat.ago(ends, now: report.now)): wiped at its next open"
            }, versionRefusal: Self.versionRefusal(row.activity),
            verified: Self.verification(row, report: report), repaired: Self.repair(row, now: report.now),
            differs: row.unresolvedMismatch.map { "differs, found \(ConsoleFormat.ago($0, now: report.now))" },
            revoked: row.isRevoked, wipe: Self.wipe(row.record.wipe, now: report.now), canWipe: row.record.wipe == nil,
            refused: refused.map { refusal in
                DevicePage.Refused(
                    time: ConsoleFormat.time(refusal.time), reason: refusal.reason.rawValue, changeSet: refusal.changeSetID,
                    entries: refusal.entries.map(ConsoleFormat.entry), records: RefusedRecordsPartial.records(of: refusal),
                    handling: row.isWiped
                        ? nil
                        : RefusalHandlingPartial.handling(
                            refusal, csrf: context.session.session.csrf, back: here, names: names, now: report.now),
                    moot: RefusalHandlingPartial.moot(row.isWiped), handled: refusal.handledAt != nil)
            },
            refusedNote: refused.count == refusalLimit
                ? "The newest \(refusalLimit), handled or not; all of them on the refusals page."
                : "Change sets the server refused, newest first, handled or not: nothing of them was applied.",
            committed: committed.items.reversed().map { changeSet in
                DevicePage.Committed(
                    revision: changeSet.revision, time: ConsoleFormat.time(Int64(changeSet.time.timeIntervalSince1970)),
                    changeSet: changeSet.changeSetID ?? "", records: ConsoleFormat.records(changeSet.listing),
                    counts: ConsoleFormat.counts(changeSet.listing),
                    revertURL: changeSet.revertedBy == nil && !row.isWiped
                        ? "/admin/revert?revision=\(changeSet.revision)&back=\(Self.queryValue(here))" : nil,
                    note: changeSet.revertedBy.map { "reverted by revision \($0)" }
                        ?? (row.isWiped ? "the device was wiped: revert it from the history" : nil))
            },
            olderURL: committed.next.map { "\(here)?before=\($0)" }, newestURL: before == nil ? nil : here)
        return renderer.response(page)
    }

    func revokePage(_ context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameters.require("id", as: Int64.self)
        let records = try await engine.storage.withReader { try $0.allDevices() }
        guard let record = records.first(where: { $0.device.id == id }), record.revokedAt == nil else {
            return message(
                context, status: .notFound, heading: "Nothing to revoke", kind: .error, text: "There is no unrevoked device \(id).",
                back: "/admin/devices")
        }
        return renderer.response(
            ConfirmPage(
                chrome: chrome(context, .devices), heading: "Revoke the token of \(record.device.name)?",
                question:
                    "The device can no longer sync or stream; what it has not sent stays on it. A revoked token cannot be restored: the device needs a new one.",
                action: "/admin/devices/\(id)/revoke", button: "Revoke", back: "/admin/devices"))
    }

    func revoke(_ context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameters.require("id", as: Int64.self)
        guard id != context.session.session.device.id else {
            return message(
                context, status: .conflict, heading: "Not revoked", kind: .error,
                text: "This is the token you are signed in with: sign in with another admin token to revoke it.", back: "/admin/devices")
        }
        let revoked = try await engine.storage.withWriter { writer in try writer.transaction { try writer.revokeDevice(id: id) } }
        guard revoked else {
            return message(
                context, status: .notFound, heading: "Nothing revoked", kind: .error, text: "There is no unrevoked device \(id).",
                back: "/admin/devices")
        }
        logger.info("console: token revoked", metadata: ["device": "\(id)", "by": "\(context.session.session.device.name)"])
        return ConsoleRenderer.redirect("/admin/devices")
    }

    /// A wipe in words: pending since the order, or what the device's receipt says it removed.
    static func wipe(_ wipe: DeviceRecord.Wipe?, now: Int64) -> String? {
        guard let wipe else { return nil }
        guard let receipt = wipe.receipt, let wipedAt = wipe.wipedAt else {
            return "Wipe pending since \(ConsoleFormat.ago(wipe.orderedAt, now: now)): the device has not come back."
        }
        let why = receipt.reason == .leaseExpired ? " by its offline lease" : ""
        return
            "Wiped\(why) \(ConsoleFormat.ago(wipedAt, now: now)): \(counted(Int(receipt.records), "record")), \(counted(Int(receipt.unsyncedChangeSets), "unsynced change set")) and \(counted(Int(receipt.attachments), "attachment")) removed."
    }

    /// *Revoke and wipe…*: what the device holds, to confirm.
    func wipePage(_ context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameters.require("id", as: Int64.self)
        await activity.flushBeforeReading()
        let report = try await FleetReport.load(
            from: engine.storage, schema: engine.schema, leaseDays: configuration.offlineLeaseDays(engine.lineage))
        guard let row = report.rows.first(where: { $0.device.id == id }), row.record.wipe == nil else {
            return message(
                context, status: .notFound, heading: "Nothing to wipe", kind: .error,
                text: "There is no device \(id) without a wipe order.", back: "/admin/devices")
        }
        let records = try await engine.storage.withReader { try $0.recordCounts() }.reduce(Int64(0)) { $0 + $1.count }
        let holds =
            row.currency == .neverSynced
            ? ["It never synced: it holds nothing of the data set."]
            : [
                "Up to \(counted(Int(records), "record")) (the data set at revision \(row.revision), the last it received).",
                "Unsynced change sets, as it last reported: \(row.activity?.pending.map(String.init) ?? "unknown") (discarded: they never reach the server).",
                "The attachment files its records refer to (photos, documents), as far as it downloaded them.",
            ]
        return renderer.response(
            ConfirmPage(
                chrome: chrome(context, .devices), heading: "Revoke and wipe \(row.device.name)?",
                question:
                    "Its token is revoked, and at its next request (or at once if it is live) the device removes everything RevSync keeps for the data set and sends a receipt. A device that never comes back stays \"wipe pending\". It holds:",
                details: holds, action: "/admin/devices/\(id)/wipe", button: "Revoke and wipe", back: "/admin/devices/\(id)"))
    }

    func orderWipe(_ context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameters.require("id", as: Int64.self)
        guard id != context.session.session.device.id else {
            return message(
                context, status: .conflict, heading: "Not wiped", kind: .error,
                text: "This is the token you are signed in with: sign in with another admin token to wipe its device.",
                back: "/admin/devices")
        }
        guard try await engine.revoke(device: id, wipe: true) != nil else {
            return message(
                context, status: .notFound, heading: "Nothing wiped", kind: .error, text: "There is no device \(id).",
                back: "/admin/devices")
        }
        logger.notice(
            "console: token revoked and its device's wipe ordered",
            metadata: ["device": "\(id)", "by": "\(context.session.session.device.name)"])
        return ConsoleRenderer.redirect("/admin/devices/\(id)")
    }

    /// The client library and the schema version its app speaks: `RevSyncClient/0.9 (Linux) · schema v2`,
    /// and why the server refuses that version, if it does.
    static func client(_ activity: DeviceActivityRecord?, unknown: String = "–", refusalApart: Bool = false) -> String {
        let client = activity?.clientVersion ?? unknown
        guard let version = activity?.schemaVersion else { return client }
        switch activity?.versionRefusal {
        case nil: return "\(client) · schema v\(version)"
        // The device page says why on a line of its own (``versionRefusal(_:)``).
        case _? where refusalApart: return "\(client) · schema v\(version) (refused)"
        case "upgrade_required"?: return "\(client) · schema v\(version), refused: a retired schema version; update the app"
        case _?: return "\(client) · schema v\(version), refused: newer than the server's schema"
        }
    }

    /// Why the server refuses the schema version the device's app speaks, as the device page
    /// says it on a line of its own (`nil`: it does not).
    static func versionRefusal(_ activity: DeviceActivityRecord?) -> String? {
        guard let code = activity?.versionRefusal else { return nil }
        let version = activity?.schemaVersion.map { " \($0)" } ?? ""
        let waiting = activity?.pending.map { $0 > 0 ? " It holds \(counted($0, "change set")) waiting to be sent." : "" } ?? ""
        return code == "upgrade_required"
            ? "Refused: its app speaks schema version\(version), which is retired (minimumVersion). Update the app.\(waiting)"
            : "Refused: its app speaks schema version\(version), newer than the server's. Upgrade the server's schema.\(waiting)"
    }
}
