/// The members only a server writes in a change set: its revision and outcome, the conflicts
/// of a refusal, and an erasure's notice.
extension WireDecoder {
    func decodeServerKey(_ key: String, into changeSet: inout ChangeSet, _ reader: inout JSONReader) throws {
        switch key {
        case "revision": changeSet.revision = try reader.readInteger()
        case "conflict": changeSet.conflict = try reader.readBool()
        case "reason": changeSet.reason = ConflictReason(rawValue: try reader.readString())
        case "snapshot": changeSet.snapshot = try reader.readBool()
        default:
            var entries: [ConflictEntry] = []
            try reader.readArray { reader, index in
                self.path.append(.index(index))
                entries.append(try self.decodeConflictEntry(&reader))
                self.path.removeLast()
            }
            changeSet.conflicts = entries
        }
    }

    func decodeErasureNotice(_ reader: inout JSONReader) throws -> ErasureNotice {
        var notice = ErasureNotice(erasure: 0, records: [])
        var seen = Set<String>()
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            case "erasure": notice.erasure = try reader.readInteger()
            case "records":
                try reader.readArray { reader, index in
                    self.path.append(.index(index))
                    var record = ErasedRecord(entity: "", id: 0)
                    var seen = Set<String>()
                    try reader.readObject { reader, key in
                        try self.enter(key, seen: &seen)
                        switch key {
                        case "type": record.entity = try reader.readString()
                        case "id": record.id = RecordID(try reader.readInteger())
                        case "attributes":
                            var names: [String] = []
                            try reader.readArray { reader, _ in names.append(try reader.readString()) }
                            record.attributes = names
                        default: try reader.skipValue()
                        }
                        self.path.removeLast()
                    }
                    notice.records.append(record)
                    self.path.removeLast()
                }
            default: try reader.skipValue()
            }
            self.path.removeLast()
        }
        return notice
    }

    private func decodeConflictEntry(_ reader: inout JSONReader) throws -> ConflictEntry {
        var entry = ConflictEntry(type: "", id: 0, reason: ConflictReason(rawValue: ""))
        var seen = Set<String>()
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            case "type": entry.type = try reader.readString()
            case "id": entry.id = RecordID(try reader.readInteger())
            case "reason": entry.reason = ConflictReason(rawValue: try reader.readString())
            case "clientRevision": entry.clientRevision = try self.readOptionalInteger(&reader)
            case "serverRevision": entry.serverRevision = try self.readOptionalInteger(&reader)
            case "attribute": entry.attribute = try self.readOptionalString(&reader)
            case "message": entry.message = try self.readOptionalString(&reader)
            default: try reader.skipValue()
            }
            self.path.removeLast()
        }
        return entry
    }
}
