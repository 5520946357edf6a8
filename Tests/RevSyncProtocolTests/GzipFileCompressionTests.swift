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

    /// Pieces compressed ahead while the file was still being written serve only where the file
    /// ended the same: a piece changed since, and the piece after it (its window reaches back
    /// into the changed one), are compressed again; what grew after the start is compressed at
    /// the end. The result is the final file, for our decoder and the system's `gzip`; with
    /// nothing changed, the same bytes as without pieces ahead.
    @Test func piecesCompressedAheadServeOnlyWhereTheFileEndedTheSame() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-ahead-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var generator = SystemRandomNumberGenerator()
        let phrase = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let piece = 1 << 20
        var content = (0..<(9 * piece + piece / 2)).map { index in phrase[index % phrase.count] }
        let (source, compressed, plain, back) = ("\(directory)/file", "\(directory)/file.gz", "\(directory)/plain.gz", "\(directory)/back")
        try Data(content).write(to: URL(fileURLWithPath: source))

        // Unchanged: every whole piece read ahead is used, and the file is the same bytes.
        let unchanged = Gzip.PiecesAhead(level: 5)
        unchanged.start(file: source)
        try await waitUntilRead(unchanged, pieces: 9)
        try Gzip.compressFile(at: source, to: compressed, level: 5, ahead: unchanged)
        try Gzip.compressFile(at: source, to: plain, level: 5)
        #expect(unchanged.piecesUsed == 9)
        #expect(try Data(contentsOf: URL(fileURLWithPath: compressed)) == Data(contentsOf: URL(fileURLWithPath: plain)))

        // No more than the limit is read ahead.
        let limited = Gzip.PiecesAhead(level: 5, limit: 3)
        limited.start(file: source)
        try await waitUntilRead(limited, pieces: 3)
        try await Task.sleep(for: .milliseconds(200))
        try FileManager.default.removeItem(atPath: compressed)
        try Gzip.compressFile(at: source, to: compressed, level: 5, ahead: limited)
        #expect(limited.piecesRead == 3 && limited.piecesUsed == 3)
        #expect(try Data(contentsOf: URL(fileURLWithPath: compressed)) == Data(contentsOf: URL(fileURLWithPath: plain)))

        // Changed in pieces 0 and 4 (its end) after they were read, and grown by a piece and a half.
        let ahead = Gzip.PiecesAhead(level: 5)
        ahead.start(file: source)
        try await waitUntilRead(ahead, pieces: 9)
        content[100] ^= 0xFF
        content[5 * piece - 50] ^= 0xFF  // in the window of piece 5
        content += (0..<(piece + piece / 2)).map { index in phrase[(index * 7) % phrase.count] }
        try Data(content).write(to: URL(fileURLWithPath: source))
        try FileManager.default.removeItem(atPath: compressed)
        try Gzip.compressFile(at: source, to: compressed, level: 5, ahead: ahead)
        // Pieces 0, 1 (its window changed), 4 and 5 again; 2, 3, 6, 7 and 8 as read ahead.
        #expect(ahead.piecesUsed == 5)
        try Gzip.decompressFile(at: compressed, to: back, limit: content.count)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: back))) == content)
        #expect(try systemGunzip(compressed) == content)
    }

    private func waitUntilRead(_ ahead: Gzip.PiecesAhead, pieces: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ahead.piecesRead < pieces, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(ahead.piecesRead == pieces)
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
