import Foundation
import RevSyncProtocol
import Testing

/// A file compressed on every core is one gzip member that every reader takes for the file:
/// our own decoder and the system's `gzip`, across piece and batch boundaries.
@Suite struct GzipFileCompressionTests {
    /// Sizes around the pieces (a mebibyte) and the batches (four pieces per core), with
    /// repeats that reach back across a piece's boundary (the dictionary must be the right one).
    @Test(arguments: [0, 1, 1 << 20, (1 << 20) + 1, 9 * (1 << 20) + 12_345])
    func compressedOnEveryCoreIsTheFile(bytes: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-file-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var generator = SystemRandomNumberGenerator()
        let phrase = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let content = (0..<bytes).map { index in index % 4096 == 0 ? UInt8(truncatingIfNeeded: index >> 12) : phrase[index % phrase.count] }
        let (source, compressed, back) = ("\(directory)/file", "\(directory)/file.gz", "\(directory)/back")
        try Data(content).write(to: URL(fileURLWithPath: source))

        try Gzip.compressFile(at: source, to: compressed)

        let deflated = try [UInt8](Data(contentsOf: URL(fileURLWithPath: compressed)))
        try Gzip.decompressFile(at: compressed, to: back, limit: bytes)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: back))) == content)
        #expect(try systemGunzip(compressed) == content, "the system's gzip reads another member or other bytes")
        if bytes > 1 << 20 {
            #expect(deflated.count < bytes * 3 / 4, "repeats across pieces are found: \(deflated.count) of \(bytes) bytes")
        }
        let mode = try FileManager.default.attributesOfItem(atPath: compressed)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    private func systemGunzip(_ path: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-d", "-c", path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "gzip -d exited \(process.terminationStatus)")
        return [UInt8](bytes)
    }
}
