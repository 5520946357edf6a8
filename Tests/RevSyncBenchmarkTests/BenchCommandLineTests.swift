import Foundation
import RevSyncTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `revsync-bench` as a person runs it: from the `PATH`, through a link, or alone.
@Suite struct BenchCommandLineTests {
    /// Every executable says its version, and the git revision it was built from.
    @Test func everyExecutableSaysItsVersion() async throws {
        for executable in ["revsync", "revsync-server", "revsync-bench"] {
            let result = try await ExecutableProcess.run(executable, ["--version"])
            #expect(result.status == 0, "\(executable): \(result.stderr)")
            #expect(result.stdout.hasPrefix("\(executable) 0."), "\(result.stdout)")
            // Built from this checkout: the revision is named.
            #expect(result.stdout.contains("(git "), "\(result.stdout)")
        }
    }

    /// Run through a link in another directory with a `PATH` that lacks the build folder, it
    /// finds the server next to itself; a copy alone says what is missing, in words.
    @Test func findsTheServerNextToItselfOrSaysWhatIsMissing() async throws {
        try await withTemporaryDirectory { directory in
            let real = ExecutableProcess.productsDirectory.appendingPathComponent("revsync-bench").path
            let symlink = directory.file("revsync-bench")
            try FileManager.default.createSymbolicLink(atPath: symlink, withDestinationPath: real)
            let linked = try await ExecutableProcess.run(
                symlink, ["full-sync", "--records", "100"], environment: ["PATH": "/usr/bin:/bin"])
            #expect(linked.status == 0, "\(linked.stderr)")
            #expect(linked.stderr.contains("revsync-bench: seeding 100 records") && linked.stderr.contains("measuring"))

            // Alone: a hard link (the same file under another name, so that no process of this
            // test run can hold it open for writing while it starts, as a copy could: ETXTBSY).
            let alone = directory.file("alone")
            try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
            if link(real, alone + "/revsync-bench") != 0 {
                try FileManager.default.copyItem(atPath: real, toPath: alone + "/revsync-bench")
            }
            var copied = (status: Int32(0), stdout: "", stderr: "")
            for attempt in 1...20 {
                do {
                    copied = try await ExecutableProcess.run(
                        alone + "/revsync-bench", ["full-sync", "--records", "100"], environment: ["PATH": "/usr/bin:/bin"])
                    break
                } catch  where attempt < 20 {
                    try await Task.sleep(for: .milliseconds(100))  // a copy still open in a child being spawned
                }
            }
            #expect(copied.status != 0)
            #expect(copied.stderr.contains("cannot find revsync-server and revsync"), "\(copied.stderr)")
            #expect(!copied.stderr.contains("error 2"))
        }
    }
}
