import RevSyncProtocol
import Testing

@testable import RevSyncEngine

/// A range split while its records go by: the parts are contiguous, cover the range, sum to
/// its digest, and hold about equal numbers of records, at most `fanout` of them.
@Suite struct RangeSplitterTests {
    @Test(arguments: [0, 1, 5, 127, 128, 129, 1_000, 5_003])
    func partsCoverTheRangeAndSumToItsDigest(count: Int) {
        let range = DigestRange(entity: "players", from: 10, to: 1_000_000)
        var splitter = RangeSplitter(range, count: count)
        var expected = DigestSum.empty
        var ids: [Int64] = []
        for index in 0..<count {
            let id = Int64(10 + index * 3)
            let hash = RecordHash(low: UInt64(index) &* 0x9E37_79B9_7F4A_7C15, high: UInt64(index) ^ 0xABCD)
            splitter.add(RecordID(id), hash)
            expected.add(hash)
            ids.append(id)
        }
        let (total, parts) = splitter.finish()
        #expect(total == expected)
        #expect(parts.count == max(1, min(DataSetVerification.fanout, count)))
        #expect(parts.first?.range.from == range.from && parts.last?.range.to == range.to)
        for (part, next) in zip(parts, parts.dropFirst()) { #expect(part.range.to == next.range.from) }
        var sum = DigestSum.empty
        for part in parts { sum.add(part.digest) }
        #expect(sum == expected)
        // Each part holds the records of its bounds, about count / parts of them.
        let sizes = parts.map { part in ids.filter { $0 >= (part.range.from ?? .min) && $0 < (part.range.to ?? .max) }.count }
        #expect(sizes.reduce(0, +) == count)
        if count > 0 { #expect(sizes.max()! - sizes.min()! <= 1, "\(sizes)") }
    }
}
