/// A set of records summed up: how many, and the sum of their ``RecordHash``es (each half
/// modulo 2^64). Adding a record adds its hash, removing it subtracts it, so a digest follows
/// its records as they change, without reading the others; two sets are equal (but for a
/// chance of 2^-128 that nobody meets by accident) when their digests are.
///
/// Written `count:` and the sum's 32 hexadecimal digits: `1200:0a1b…`.
public struct DigestSum: Sendable, Hashable, CustomStringConvertible {
    public var count: Int64
    public var sum: RecordHash

    public static let empty = DigestSum(count: 0, sum: RecordHash(low: 0, high: 0))

    public init(count: Int64, sum: RecordHash) {
        self.count = count
        self.sum = sum
    }

    public mutating func add(_ hash: RecordHash) {
        count += 1
        sum = RecordHash(low: sum.low &+ hash.low, high: sum.high &+ hash.high)
    }

    public mutating func remove(_ hash: RecordHash) {
        count -= 1
        sum = RecordHash(low: sum.low &- hash.low, high: sum.high &- hash.high)
    }

    public mutating func add(_ other: DigestSum) {
        count += other.count
        sum = RecordHash(low: sum.low &+ other.sum.low, high: sum.high &+ other.sum.high)
    }

    public mutating func subtract(_ other: DigestSum) {
        count -= other.count
        sum = RecordHash(low: sum.low &- other.sum.low, high: sum.high &- other.sum.high)
    }

    public var description: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(54)
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `count:` and the 32 hexadecimal digits of the sum, appended to `bytes`.
    func write(into bytes: inout [UInt8]) {
        var digits: [UInt8] = []
        var rest = UInt64(bitPattern: count)
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        if count < 0 {
            bytes.append(contentsOf: String(count).utf8)
        } else {
            bytes.append(contentsOf: digits.reversed())
        }
        bytes.append(UInt8(ascii: ":"))
        sum.writeHex(into: &bytes)
    }

    /// The digest written as ``description``, or `nil`.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let count = Int64(parts[0]), count >= 0, let sum = RecordHash(hex: parts[1]) else { return nil }
        self.init(count: count, sum: sum)
    }
}

/// A data set's digest, entity by entity (each a ``DigestSum`` of its records), as the server
/// keeps it with its revision counter and a device with its store.
///
/// Written `players=1200:0a1b…;teams=40:77c2…`, by entity name; entities without records are
/// left out.
public struct DataSetDigest: Sendable, Hashable, CustomStringConvertible {
    public var entities: [String: DigestSum]

    public init(entities: [String: DigestSum] = [:]) {
        self.entities = entities
    }

    public subscript(_ entity: String) -> DigestSum {
        get { entities[entity] ?? .empty }
        set { entities[entity] = newValue.count == 0 && newValue.sum == DigestSum.empty.sum ? nil : newValue }
    }

    /// Every record of every entity, summed: what a sync response carries.
    public var total: DigestSum {
        var total = DigestSum.empty
        for sum in entities.values { total.add(sum) }
        return total
    }

    /// Replaces a record's hash: `old` (`nil`: it was not there) by `new` (`nil`: it is gone).
    public mutating func replace(_ entity: String, _ old: RecordHash?, with new: RecordHash?) {
        guard old != new else { return }
        var sum = self[entity]
        if let old { sum.remove(old) }
        if let new { sum.add(new) }
        self[entity] = sum
    }

    public var description: String {
        // Written byte by byte: the server writes it with every commit.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entities.count * 64)
        for (index, name) in entities.keys.sorted().enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ";")) }
            bytes.append(contentsOf: name.utf8)
            bytes.append(UInt8(ascii: "="))
            entities[name]!.write(into: &bytes)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What a data set's digest depends on in a schema: its entities, their attributes' names
    /// and types. Two schemas with the same fingerprint hash every record alike.
    public static func fingerprint(of schema: Schema) -> String {
        schema.entities.map(fingerprint(of:)).sorted().joined(separator: ";")
    }

    /// What the hashes of one entity's records depend on: its name, its attributes' names and
    /// types (`players(first_name:text,height_cm:real)`).
    public static func fingerprint(of entity: Entity) -> String {
        entity.name + "(" + entity.attributes.map { "\($0.name):\($0.type.name)" }.sorted().joined(separator: ",") + ")"
    }

    /// The entities of `schema` whose records hash alike under `other` (another schema's
    /// fingerprint, or `nil`): their sums carry over from one to the other.
    public static func unchangedEntities(of schema: Schema, since other: String?) -> Set<String> {
        let before = Set((other ?? "").split(separator: ";").map(String.init))
        return Set(schema.entities.filter { before.contains(fingerprint(of: $0)) }.map(\.name))
    }

    /// The digest written as ``description``, or `nil`.
    public init?(_ text: some StringProtocol) {
        var entities: [String: DigestSum] = [:]
        for part in text.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let sum = DigestSum(pair[1]) else { return nil }
            entities[String(pair[0])] = sum
        }
        self.init(entities: entities)
    }
}
