extension SyncMessage {
    /// Decodes and checks a sync message.
    ///
    /// For a request (`sender: .client`) every rule of a well-formed request is checked here,
    /// before anything is applied: a failure is a ``ProtocolError`` naming the JSON path.
    /// Whether the schema accepts the change sets is not checked here; that is decided per
    /// change set by the server.
    ///
    /// For example:
    ///
    /// ```swift
    /// let request = try SyncMessage(json: Array(body), sender: .client)
    /// ```
    ///
    /// - Parameter limits: bounds checked while decoding (``ProtocolError/isTooLarge``).
    public init(json: [UInt8], sender: MessageSender, limits: DecodingLimits = .none) throws(ProtocolError) {
        self = try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try WireDecoder(sender: sender, limits: limits).decode(buffer)
        }
    }

    /// Decodes a message from a string (tests, tools).
    public init(json: String, sender: MessageSender) throws(ProtocolError) {
        try self.init(json: Array(json.utf8), sender: sender)
    }
}

extension SyncMessage {
    /// Decodes a server response without building it whole: each change set is handed to
    /// `changeSet` as soon as it is read, and the records of a snapshot change set are handed
    /// one by one to `snapshotRecord` instead of being collected (the change set then arrives
    /// with its `create` list and no `attributes`).
    ///
    /// A snapshot's records stream only when its `"snapshot": true` comes before its change
    /// objects, as RevSync servers write it; otherwise the change set arrives whole. The
    /// response is checked exactly as ``init(json:sender:)`` checks it; errors thrown by the
    /// handlers come out unchanged.
    ///
    /// - Parameters:
    ///   - snapshotBegins: called once per snapshot change set, before its first record, with
    ///   the change set's keys read so far.
    /// - Returns: the message without its change sets (handed over already): its `maxRevision`
    ///   and `digest`.
    @discardableResult
    public static func decodeResponse(
        json: [UInt8],
        snapshotBegins: (ChangeSet) throws -> Void,
        snapshotRecord: (_ entity: String, _ id: RecordID, _ attributes: RecordAttributes) throws -> Void,
        changeSet: (ChangeSet) throws -> Void
    ) throws -> SyncMessage {
        try decodeResponse(snapshotBegins: snapshotBegins, snapshotRecord: snapshotRecord, changeSet: changeSet) { decoder in
            try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in try decoder.decode(buffer) }
        }
    }

    /// Decodes a server response as ``decodeResponse(json:snapshotBegins:snapshotRecord:changeSet:)``
    /// does, from pieces handed over by `next` (`nil` at the end) instead of one buffer, so the
    /// response is never held whole: the decoder holds about one piece (and grows only for a
    /// single value longer than that, up to 64 MiB).
    ///
    /// An error thrown by `next` (a connection cut off) ends the decode and comes out
    /// unchanged, as the handlers' do.
    @discardableResult
    public static func decodeResponse(
        reading next: @escaping () throws -> [UInt8]?,
        snapshotBegins: (ChangeSet) throws -> Void,
        snapshotRecord: (_ entity: String, _ id: RecordID, _ attributes: RecordAttributes) throws -> Void,
        changeSet: (ChangeSet) throws -> Void
    ) throws -> SyncMessage {
        try decodeResponse(snapshotBegins: snapshotBegins, snapshotRecord: snapshotRecord, changeSet: changeSet) { decoder in
            try decoder.decode(reader: JSONReader(JSONInput(next: next), maxDepth: maximumDepth)) { decoder, reader in
                try decoder.decodeMessage(&reader)
            }
        }
    }

    /// Runs `decode` with a decoder that hands what it reads to the handlers.
    private static func decodeResponse(
        snapshotBegins: (ChangeSet) throws -> Void,
        snapshotRecord: (_ entity: String, _ id: RecordID, _ attributes: RecordAttributes) throws -> Void,
        changeSet: (ChangeSet) throws -> Void,
        decode: (WireDecoder) throws -> SyncMessage
    ) throws -> SyncMessage {
        try withoutActuallyEscaping(snapshotBegins) { snapshotBegins in
            try withoutActuallyEscaping(snapshotRecord) { snapshotRecord in
                try withoutActuallyEscaping(changeSet) { changeSet in
                    let decoder = WireDecoder(sender: .server)
                    decoder.sinks = WireDecoder.Sinks(snapshotBegins: snapshotBegins, snapshotRecord: snapshotRecord, changeSet: changeSet)
                    do {
                        return try decode(decoder)
                    } catch let error as ProtocolError {
                        if let handlerError = decoder.handlerError { throw handlerError }
                        throw error
                    }
                }
            }
        }
    }
}

extension RecordAttributes {
    /// Decodes one record's attributes object as the server writes it
    /// (`{"revision":R,"name":"U12",...}`).
    public init(json: [UInt8]) throws(ProtocolError) {
        self = try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try WireDecoder(sender: .server).decode(buffer) { decoder, reader in try decoder.decodeRecord(&reader) }
        }
    }
}

extension ChangeSet {
    /// Decodes one change set on its own, with the same rules as inside a message.
    public init(json: [UInt8], sender: MessageSender) throws(ProtocolError) {
        self = try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try WireDecoder(sender: sender).decode(buffer) { decoder, reader in try decoder.decodeChangeSet(&reader) }
        }
    }
}
