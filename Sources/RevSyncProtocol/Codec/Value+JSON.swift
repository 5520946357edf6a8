extension Value {
    /// Parses one JSON scalar (`null`, a boolean, a number or a string), as attribute values
    /// are written on the wire.
    public init(json: String) throws(ProtocolError) {
        var bytes = Array(json.utf8)
        self = try bytes.withUnsafeMutableBufferPointer { buffer throws(ProtocolError) in
            var reader = JSONReader(UnsafeBufferPointer(buffer), maxDepth: 2)
            do {
                let value: Value
                switch try reader.peekKind() {
                case .null:
                    try reader.readNull()
                    value = .null
                case .bool: value = .bool(try reader.readBool())
                case .string: value = .text(try reader.readString())
                case .number:
                    switch try reader.readNumber() {
                    case .integer(let integer): value = .integer(integer)
                    case .real(let real): value = .real(real)
                    }
                case .object: value = .attachment(try Attachment.read(&reader))
                case .array:
                    throw ProtocolError(.invalidAttribute, "attribute values are null, booleans, numbers, strings or attachments")
                }
                try reader.expectEnd()
                return value
            } catch let failure as JSONReader.Failure {
                throw ProtocolError(.invalidJSON, failure.message)
            } catch let error as ProtocolError {
                throw error
            } catch {
                throw ProtocolError(.invalidJSON, "\(error)")
            }
        }
    }
}
