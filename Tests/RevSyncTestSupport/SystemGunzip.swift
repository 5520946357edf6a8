import Foundation

/// Decompresses `bytes` with the system's `gzip`, a decoder that is not zlib: what the server
/// writes must read the same in any of them.
public func systemGunzip(_ bytes: [UInt8]) throws -> (output: [UInt8], status: Int32) {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("gunzip-\(UUID().uuidString).gz")
    try Data(bytes).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-dc", file.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ([UInt8](data), process.terminationStatus)
}
