import Foundation

/// The golden files in `Fixtures/`.
enum Fixtures {
    static func bytes(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        return Array(try Data(contentsOf: url))
    }

    /// Whether two JSON documents have the same structure and values (key order and
    /// whitespace aside; 2 and 2.0 are the same number).
    static func sameJSON(_ lhs: [UInt8], _ rhs: [UInt8]) throws -> Bool {
        let left = try JSONSerialization.jsonObject(with: Data(lhs))
        let right = try JSONSerialization.jsonObject(with: Data(rhs))
        return NSArray(array: [left]).isEqual(to: [right])
    }
}
