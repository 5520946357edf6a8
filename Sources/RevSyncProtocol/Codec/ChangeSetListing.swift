/// The records a change set lists, read from its JSON without reading their values: what
/// history and the console show of a change set that may hold 100,000 records.
///
/// It reads each entity's `create`, `update` and `delete` lists and skips everything else
/// (`attributes` above all), so its cost is a scan of the bytes and a few integers per record;
/// it keeps the first `keeping` records and counts the rest.
///
/// For example, the first three records of a logged change set, and how many there are:
///
/// ```swift
/// let listing = try ChangeSetListing(json: entry.body, keeping: 3)
/// print(listing.records.map { "\($0.entity) \($0.id) \($0.operation)" }, "of", listing.total)
/// ```
public struct ChangeSetListing: Sendable {
    /// What a change set does to a record, as the wire lists it (a cascaded delete is a
    /// `delete`, a nullified reference an `update`).
    public enum Operation: String, Sendable, Hashable {
        case create, update, delete
    }

    /// One record the change set lists.
    public struct Listed: Sendable, Hashable {
        public var entity: String
        public var id: RecordID
        public var operation: Operation
    }

    /// How many records of one entity one operation lists.
    public struct Count: Sendable, Hashable {
        public var entity: String
        public var operation: Operation
        public var count: Int
    }

    /// The first records listed (at most `keeping`), entity by entity, creates, updates, then
    /// deletes.
    public private(set) var records: [Listed] = []
    /// Every entity and operation with at least one record, in the order listed.
    public private(set) var counts: [Count] = []
    /// How many records the change set lists in all.
    public private(set) var total = 0

    /// Reads a change set as the wire format writes it (a change log entry, say).
    ///
    /// - Throws: ``ProtocolError`` when `json` is not a change set object.
    public init(json: [UInt8], keeping limit: Int = .max) throws(ProtocolError) {
        var listing = ChangeSetListing()
        try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            var reader = JSONReader(buffer)
            do {
                try reader.readObject { reader, key in
                    guard try reader.peekKind() == .object else { return try reader.skipValue() }
                    try reader.readObject { reader, member in
                        guard let operation = Operation(rawValue: member) else { return try reader.skipValue() }
                        var count = 0
                        try reader.readArray { reader, _ in
                            let id = RecordID(try reader.readInteger())
                            count += 1
                            if listing.records.count < limit { listing.records.append(Listed(entity: key, id: id, operation: operation)) }
                        }
                        if count > 0 { listing.counts.append(Count(entity: key, operation: operation, count: count)) }
                        listing.total += count
                    }
                }
                try reader.expectEnd()
            } catch let failure as JSONReader.Failure {
                throw ProtocolError(.invalidJSON, "\(failure.message) (at byte \(failure.offset))")
            } catch let error as ProtocolError {
                throw error
            } catch {
                throw ProtocolError(.invalidJSON, "\(error)")
            }
        }
        self = listing
    }

    private init() {}
}

extension AdminAPI.Operation {
    /// What a change log entry did to a record, in the API's terms (the three share their names).
    package init(_ listed: ChangeSetListing.Operation) {
        switch listed {
        case .create: self = .create
        case .update: self = .update
        case .delete: self = .delete
        }
    }
}
