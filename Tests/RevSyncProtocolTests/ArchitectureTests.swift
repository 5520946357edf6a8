import Foundation
import Testing

/// The layout the documentation promises: the engine imports nothing of the web layer, every
/// folder is named in the README, every server table in the architecture page, and no source
/// file grows past what a reader takes in.
@Suite struct ArchitectureTests {
    static let root = DocumentationTests.root

    /// Every directory below `folder` (relative to the root), hidden ones and caches left out.
    static func directories(under folder: String) -> [String] {
        let base = root.appendingPathComponent(folder)
        let entries = FileManager.default.enumerator(atPath: base.path)?.allObjects as? [String] ?? []
        let nested = entries.filter { entry in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: base.appendingPathComponent(entry).path, isDirectory: &isDirectory)
            else { return false }
            return isDirectory.boolValue && !entry.split(separator: "/").contains { $0.hasPrefix(".") || $0 == "__pycache__" }
        }
        return [folder] + nested.map { folder + "/" + $0 }
    }

    static func swiftFiles(under folder: String) -> [URL] {
        let base = root.appendingPathComponent(folder)
        let entries = FileManager.default.enumerator(atPath: base.path)?.allObjects as? [String] ?? []
        return entries.filter { $0.hasSuffix(".swift") }.map { base.appendingPathComponent($0) }
    }

    @Test func theEngineImportsNothingOfTheWebLayer() throws {
        let forbidden = ["Hummingbird", "HummingbirdCore", "NIO", "Mustache", "Prometheus", "Metrics", "CoreMetrics"]
        let files = Self.swiftFiles(under: "Sources/RevSyncEngine")
        #expect(files.count > 50)
        let importLine = /^(?:@\w+\s+)?(?:public |package |internal )?import\s+(?:\w+\s+)?([A-Za-z0-9_]+)/
        for file in files {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                guard let match = line.prefixMatch(of: importLine) else { continue }
                let module = String(match.output.1)
                #expect(
                    !forbidden.contains { module == $0 || module.hasPrefix("NIO") || module.hasPrefix("Hummingbird") },
                    "\(file.lastPathComponent) imports \(module)")
            }
        }
    }

    @Test func theReadmeNamesEveryFolder() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "## Where things are"))
        let rest = readme[start.upperBound...]
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        let named = Set(rest[..<end].matches(of: /`([^`]+)`/).map { String($0.output.1).trimmingCharacters(in: ["/"]) })
        let folders = ["Sources", "Tests", "scripts", "benchmarks", "Plugins", "Fuzz"].flatMap { Self.directories(under: $0) }
            // The roots, and a nested package's `Sources` (named through the folders inside it).
            .filter { !["Sources", "Tests", "Plugins"].contains($0) && !$0.hasSuffix("/Sources") }
        #expect(folders.count > 60)
        for folder in folders {
            #expect(named.contains(folder), "README's \"Where things are\" does not name \(folder)")
        }
    }

    @Test func theArchitecturePageListsEveryServerTable() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let tables = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/RevSyncEngine/Storage/SQL/ServerTables.swift"), encoding: .utf8)
        let created = Set(tables.matches(of: /CREATE TABLE (?:IF NOT EXISTS )?(_rs_[a-z_]+)/).map { String($0.output.1) })
        #expect(created.count >= 13)
        for table in created {
            #expect(page.contains("| `\(table)` |"), "docs/architecture.md has no row for \(table)")
        }
    }

    @Test func noSourceFileIsLongerThan600Lines() throws {
        for file in Self.swiftFiles(under: "Sources") {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 600, "\(file.path) has \(lines) lines")
        }
    }
}
