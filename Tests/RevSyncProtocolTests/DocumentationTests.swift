import Foundation
import Testing

/// The documentation stays true to the repository: links resolve inside it, and the files the
/// architecture page walks through exist.
@Suite struct DocumentationTests {
    /// The repository's root (this file is `Tests/RevSyncProtocolTests/DocumentationTests.swift`).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().standardizedFileURL

    static var pages: [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
        return [root.appendingPathComponent("README.md")]
            + names.filter { $0.hasSuffix(".md") }.sorted().map { docs.appendingPathComponent($0) }
    }

    /// The benchmarks page is a reference (targets, figures, commands, what each measures); the
    /// history of how the figures came about belongs in the performance log.
    @Test func theBenchmarksPageStaysAReference() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/benchmarks.md"), encoding: .utf8)
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 320, "docs/benchmarks.md has \(lines) lines: move history to docs/performance-log.md")
    }

    @Test func everyRelativeLinkResolvesInsideTheRepository() throws {
        #expect(Self.pages.count > 5)
        let link = /\]\(([^)#\s]+)(#[^)]*)?\)/
        for page in Self.pages {
            let text = try String(contentsOf: page, encoding: .utf8)
            for match in text.matches(of: link) {
                let target = String(match.output.1)
                guard !target.contains("://"), !target.hasPrefix("mailto:") else { continue }
                let resolved = page.deletingLastPathComponent().appendingPathComponent(target).standardizedFileURL
                #expect(
                    resolved.path.hasPrefix(Self.root.path + "/"), "\(page.lastPathComponent) links outside the repository: \(target)")
                #expect(
                    FileManager.default.fileExists(atPath: resolved.path), "\(page.lastPathComponent) links to a missing file: \(target)")
                if let fragment = match.output.2, target.hasSuffix(".md"),
                    let linked = try? String(contentsOf: resolved, encoding: .utf8)
                {
                    let anchor = String(fragment.dropFirst())
                    #expect(
                        Self.anchors(of: linked).contains(anchor),
                        "\(page.lastPathComponent) links to \(target)#\(anchor), a heading it does not have")
                }
            }
        }
    }

    @Test func everyLinkWithinAPageFindsItsHeading() throws {
        for page in Self.pages {
            let text = try String(contentsOf: page, encoding: .utf8)
            let anchors = Self.anchors(of: text)
            for match in text.matches(of: /\]\(#([^)\s]+)\)/) {
                #expect(
                    anchors.contains(String(match.output.1)),
                    "\(page.lastPathComponent) links to #\(match.output.1), a heading it does not have")
            }
        }
    }

    /// The anchors GitHub makes of a page's headings: lowercased, punctuation but `-` and `_`
    /// dropped, spaces made hyphens (code blocks left out).
    static func anchors(of markdown: String) -> Set<String> {
        var anchors = Set<String>()
        var inCode = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inCode.toggle() }
            guard !inCode, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            let slug = title.lowercased().unicodeScalars.compactMap { scalar -> Character? in
                if scalar == " " { return "-" }
                if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) { return Character(scalar) }
                return nil
            }
            anchors.insert(String(slug))
        }
        return anchors
    }

    @Test func everySourceFileTheArchitecturePageNamesExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let sources = Self.root.appendingPathComponent("Sources")
        let files = (FileManager.default.enumerator(atPath: sources.path)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }
        let named = text.matches(of: /`([A-Za-z0-9_\/+\-]+\.swift)`/).map { String($0.output.1).replacing(" ", with: "") }
        #expect(named.count > 20)
        for path in named {
            #expect(files.contains { ("/" + $0).hasSuffix("/" + path) }, "docs/architecture.md names \(path), which is not in Sources/")
        }
    }
}
