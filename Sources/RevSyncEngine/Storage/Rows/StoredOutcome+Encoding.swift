import RevSyncProtocol

extension StoredOutcome {
    /// A conflict outcome as stored: a conflict change set without records, in the wire format.
    func encodedConflict() -> [UInt8] {
        guard case .conflict(let reason, let entries) = self else { return [] }
        return ChangeSet(conflict: true, reason: reason, conflicts: entries).jsonBytes()
    }

    static func decodeConflict(_ json: [UInt8]) throws -> StoredOutcome {
        let changeSet: ChangeSet
        do {
            changeSet = try ChangeSet(json: json, sender: .server)
        } catch {
            throw StorageError.corrupt("a stored conflict outcome does not decode: \(error)")
        }
        guard let reason = changeSet.reason else { throw StorageError.corrupt("a stored conflict outcome has no reason") }
        return .conflict(reason: reason, entries: changeSet.conflicts)
    }
}
