import RevSyncProtocol

extension StoredRecord {
    /// The record's full attributes as they travel on the wire, with its revision.
    func attributes(of entity: Entity, oldID: RecordID? = nil) -> RecordAttributes {
        var values: [String: Value] = [:]
        values.reserveCapacity(entity.attributes.count)
        for (attribute, value) in zip(entity.attributes, self.values) {
            values[attribute.name] = value
        }
        return RecordAttributes(revision: revision, oldID: oldID, values: values)
    }

    /// Writes the record's attributes entry (`{"revision":R,"name":...}`) straight to JSON,
    /// in attribute order, without building a dictionary.
    func writeAttributes(of entity: Entity, into writer: inout JSONWriter) {
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(revision)
        for (attribute, value) in zip(entity.attributes, values) {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(attribute.name)
            writer.write(value)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// The same in another schema version's names (``SchemaLens``): `view`'s attributes, each
    /// read from the stored position `positions` gives.
    func writeAttributes(of view: Entity, positions: [Int], into writer: inout JSONWriter) {
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(revision)
        for (attribute, position) in zip(view.attributes, positions) {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(attribute.name)
            writer.write(position < values.count ? values[position] : .null)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}
