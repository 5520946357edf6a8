import Foundation

/// The names of the HTTP headers RevSync adds, written once for the server (which reads and
/// writes them as `HTTPField.Name`s) and the client (which looks responses' headers up
/// lowercased: use ``key(_:)``). What each means is in `docs/protocol.md` and
/// `docs/openapi.json`.
package enum RevSyncHeader {
    /// Request: the schema version the device's app was built for.
    package static let schemaVersion = "RevSync-Schema-Version"
    /// Request: the client library and its version.
    package static let client = "RevSync-Client"
    /// Request (`POST /sync`): the change sets still waiting in the outbox after this request.
    package static let pending = "RevSync-Pending"
    /// Request (`POST /sync`): the change sets this request carries (with `RevSync-Pending`, the
    /// whole outbox, for a request refused before its body is read).
    package static let sending = "RevSync-Sending"
    /// Request (`POST /sync`): the digest of the device's records at the revision it claims.
    package static let digest = "RevSync-Digest"
    /// Request (`POST /sync`): the attachments the device lacked after its previous sync.
    package static let missingAttachments = "RevSync-Missing-Attachments"
    /// Request (`POST /sync`): the proof a snapshot file carries.
    package static let snapshotProof = "RevSync-Snapshot-Proof"
    /// Response: the token's role.
    package static let role = "RevSync-Role"
    /// Response: the token's user.
    package static let user = "RevSync-User"
    /// Response (attachments): the bytes of the token's upload the server holds.
    package static let received = "RevSync-Received"
    /// Response: a revision (`GET /snapshot`: of the file; `409 revision_moved`: the server's).
    package static let revision = "X-RevSync-Revision"
    /// Response (`GET /snapshot`): the data set's identity.
    package static let dataset = "X-RevSync-Dataset"
    /// Response: the latest schema version (`POST /sync`), the file's (`GET /snapshot`).
    package static let latestSchemaVersion = "X-RevSync-Schema-Version"
    /// Response (`GET /snapshot`): the records in the file.
    package static let records = "X-RevSync-Records"
    /// Response (`GET /snapshot`): the SHA-256 of the decompressed file.
    package static let snapshotSHA256 = "X-RevSync-Snapshot-SHA256"
    /// Response (`GET /snapshot`): the decompressed file's length.
    package static let snapshotLength = "X-RevSync-Snapshot-Length"

    /// Response (`POST /sync`): the offline lease in days (`revsync-server serve
    /// --max-offline-days`); absent without one.
    package static let maxOfflineDays = "RevSync-Max-Offline-Days"
    /// Response (`POST /sync`): the server's clock, seconds since 1970.
    package static let serverTime = "RevSync-Server-Time"

    /// Request (`POST /sync`, `POST /verify`): what the device's proof covers beyond the sums its
    /// change marks move: the revision its last complete audit began at (every record re-hashed
    /// from its row since), or `none`.
    package static let audited = "RevSync-Audited"

    /// The `RevSync-Audited` value of `revision` (`none` for `nil`).
    package static func auditedValue(_ revision: Revision?) -> String {
        revision.map(String.init) ?? "none"
    }

    /// Request (`POST /wipe-receipt`): the SHA-256 of the device's token, in lowercase
    /// hexadecimal, which a wiped store keeps instead of the token: it authorises the wipe's
    /// receipt and nothing else.
    package static let tokenSHA256 = "RevSync-Token-SHA256"

    /// Request (`POST /sync`): the refused change sets the request's change sets write again
    /// (the refusal inbox's re-apply), `NEW=REFUSED` pairs of change set ids separated by commas:
    /// once NEW commits, the server marks the device's refusal of REFUSED handled. At most
    /// ``maxReapplies`` pairs are read.
    package static let reapplies = "RevSync-Reapplies"
    package static let maxReapplies = 100

    /// The `RevSync-Reapplies` value of `pairs` (`nil` without any): ids percent-encoded where
    /// they hold a comma, an equals sign, a percent sign or a character outside printable ASCII.
    package static func reappliesValue(_ pairs: [String: String]) -> String? {
        guard !pairs.isEmpty else { return nil }
        var allowed = CharacterSet(
            charactersIn: "!#$&'()*+-./0123456789:;<>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~")
        allowed.remove(charactersIn: ",=%")
        func encoded(_ id: String) -> String { id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id }
        return pairs.keys.sorted().prefix(maxReapplies).map { "\(encoded($0))=\(encoded(pairs[$0]!))" }.joined(separator: ",")
    }

    /// The pairs of a `RevSync-Reapplies` value; malformed pairs are left out.
    package static func reappliesPairs(_ value: String?) -> [String: String] {
        guard let value else { return [:] }
        var pairs: [String: String] = [:]
        for pair in value.split(separator: ",").prefix(maxReapplies) {
            let parts = pair.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, let new = parts[0].removingPercentEncoding, let refused = parts[1].removingPercentEncoding,
                Names.isChangeSetID(new), Names.isChangeSetID(refused)
            else { continue }
            pairs[new] = refused
        }
        return pairs
    }

    /// `name` as a lowercased dictionary key, the way the client's transports keep headers.
    package static func key(_ name: String) -> String { name.lowercased() }
}
