extension SyncMessage {
    /// The message as compact JSON in the wire format.
    ///
    /// Keys come in a fixed order (change-set keys, then `types`, then the change objects in
    /// `types` order; in a record `revision`, `__oldId__`, then the values by name), so the
    /// same message always encodes to the same bytes.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw("{\"maxRevision\":")
        writer.writeInteger(maxRevision)
        writer.writeRaw(",\"changeSets\":[")
        for (index, changeSet) in changeSets.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            changeSet.encode(into: &writer)
        }
        writer.writeByte(UInt8(ascii: "]"))
        if let digest {
            writer.writeRaw(",\"digest\":")
            writer.writeString(digest.description)
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }
}

extension ChangeSet {
    /// The change set as compact JSON.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        encode(into: &writer)
        return writer.bytes
    }

    public func encode(into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        // First: a log entry that starts with it is an erasure's (``ErasureNotice/logPrefix``).
        if let erased {
            erased.encode(into: &writer)
            writer.writeByte(UInt8(ascii: ","))
        }
        if let id {
            writer.writeKey("id")
            writer.writeString(id)
            writer.writeByte(UInt8(ascii: ","))
        }
        if let revision {
            writer.writeRaw("\"revision\":")
            writer.writeInteger(revision)
            writer.writeByte(UInt8(ascii: ","))
        }
        if snapshot {
            writer.writeRaw("\"snapshot\":true,")
        }
        if let conflict {
            writer.writeRaw("\"conflict\":")
            writer.writeBool(conflict)
            writer.writeByte(UInt8(ascii: ","))
        }
        if let reason {
            writer.writeKey("reason")
            writer.writeString(reason.rawValue)
            writer.writeByte(UInt8(ascii: ","))
        }
        if conflict == true || !conflicts.isEmpty {
            writer.writeRaw("\"conflicts\":[")
            for (index, entry) in conflicts.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                entry.encode(into: &writer)
            }
            writer.writeRaw("],")
        }
        writer.writeRaw("\"types\":[")
        for (index, changes) in changes.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(changes.entity)
        }
        writer.writeByte(UInt8(ascii: "]"))
        for changes in changes {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(changes.entity)
            changes.encode(into: &writer)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}

extension EntityChanges {
    public func encode(into writer: inout JSONWriter) {
        writer.writeRaw("{\"create\":")
        Self.encode(create, into: &writer)
        writer.writeRaw(",\"update\":")
        Self.encode(update, into: &writer)
        writer.writeRaw(",\"delete\":")
        Self.encode(delete, into: &writer)
        writer.writeRaw(",\"attributes\":{")
        var first = true
        var written = Set<RecordID>()
        func write(_ id: RecordID) {
            guard let record = attributes[id], written.insert(id).inserted else { return }
            if !first { writer.writeByte(UInt8(ascii: ",")) }
            first = false
            writer.writeByte(UInt8(ascii: "\""))
            writer.writeInteger(id.rawValue)
            writer.writeRaw("\":")
            record.encode(into: &writer)
        }
        for id in create { write(id) }
        for id in update { write(id) }
        for id in delete { write(id) }
        if written.count < attributes.count {
            for id in attributes.keys.filter({ !written.contains($0) }).sorted() { write(id) }
        }
        writer.writeRaw("}}")
    }

    private static func encode(_ ids: [RecordID], into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "["))
        for (index, id) in ids.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeInteger(id.rawValue)
        }
        writer.writeByte(UInt8(ascii: "]"))
    }
}

extension RecordAttributes {
    public func encode(into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        var first = true
        func separator() {
            if !first { writer.writeByte(UInt8(ascii: ",")) }
            first = false
        }
        if let revision {
            separator()
            writer.writeRaw("\"revision\":")
            writer.writeInteger(revision)
        }
        if let oldID {
            separator()
            writer.writeRaw("\"__oldId__\":")
            writer.writeInteger(oldID.rawValue)
        }
        for name in values.keys.sorted() {
            separator()
            writer.writeKey(name)
            writer.write(values[name]!)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}

extension ConflictEntry {
    public func encode(into writer: inout JSONWriter) {
        writer.writeRaw("{\"type\":")
        writer.writeString(type)
        writer.writeRaw(",\"id\":")
        writer.writeInteger(id.rawValue)
        writer.writeRaw(",\"reason\":")
        writer.writeString(reason.rawValue)
        writer.writeRaw(",\"clientRevision\":")
        if let clientRevision { writer.writeInteger(clientRevision) } else { writer.writeNull() }
        writer.writeRaw(",\"serverRevision\":")
        if let serverRevision { writer.writeInteger(serverRevision) } else { writer.writeNull() }
        if let attribute {
            writer.writeRaw(",\"attribute\":")
            writer.writeString(attribute)
        }
        if let message {
            writer.writeRaw(",\"message\":")
            writer.writeString(message)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}

extension ErasureNotice {
    /// How the change log entry of an erasure begins: caches of log entries recognise it.
    public static let logPrefix: [UInt8] = Array("{\"__erased__\":".utf8)

    /// Writes `"__erased__": {...}`.
    public func encode(into writer: inout JSONWriter) {
        writer.writeRaw("\"__erased__\":{\"erasure\":")
        writer.writeInteger(erasure)
        writer.writeRaw(",\"records\":[")
        for (index, record) in records.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"type\":")
            writer.writeString(record.entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(record.id.rawValue)
            if let attributes = record.attributes {
                writer.writeRaw(",\"attributes\":")
                writer.writeStrings(attributes)
            }
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("]}")
    }
}
