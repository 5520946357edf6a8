/// A set of record IDs for telling a repeated ID in a large message (a full sync's million
/// records): positive IDs up to 2^24 as bits (a million IDs in 125 KB, where a `Set` took
/// 16 MB), any other in a `Set`.
struct RecordIDSet {
    private var bits: [UInt64] = []
    private var others = Set<RecordID>()

    private static let bitLimit: Int64 = 1 << 24

    /// Adds `id`; returns whether it was not there yet.
    mutating func insert(_ id: RecordID) -> Bool {
        let value = id.rawValue
        guard value > 0, value < Self.bitLimit else { return others.insert(id).inserted }
        let word = Int(value >> 6)
        let mask = UInt64(1) << UInt64(value & 63)
        if word >= bits.count {
            bits.append(contentsOf: repeatElement(0, count: max(word + 1, bits.count * 2) - bits.count))
        }
        guard bits[word] & mask == 0 else { return false }
        bits[word] |= mask
        return true
    }
}
