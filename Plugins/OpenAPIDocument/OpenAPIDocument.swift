import Foundation
import PackagePlugin

/// Writes `OpenAPIDocument.swift` before every build of the target that uses it: the package's
/// `docs/openapi.json`, the HTTP API's contract, as a string the server answers `GET
/// /openapi.json` with. One document, kept in `docs/` where readers find it, compiled into the
/// binary so that a server copied anywhere serves it. The file is rewritten only when the
/// document changes.
@main
struct OpenAPIDocument: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = ###"""
            set -eu
            mkdir -p "$2"
            if grep -q '"##' "$1/docs/openapi.json"; then echo "docs/openapi.json may not contain \"##" >&2; exit 1; fi
            {
                printf '/// docs/openapi.json (written by the OpenAPIDocument plugin).\npackage let openAPIDocument = ##"""\n'
                cat "$1/docs/openapi.json"
                # The line break before the closing delimiter is not part of the string: one more
                # keeps the file's last one.
                printf '\n"""##\n'
            } > "$2/OpenAPIDocument.swift.new"
            if cmp -s "$2/OpenAPIDocument.swift.new" "$2/OpenAPIDocument.swift"; then rm "$2/OpenAPIDocument.swift.new"; else mv "$2/OpenAPIDocument.swift.new" "$2/OpenAPIDocument.swift"; fi
            """###
        return [
            .prebuildCommand(
                displayName: "The OpenAPI document of \(target.name)", executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", script, "openapi-document", context.package.directoryURL.path(), output.path()],
                outputFilesDirectory: output)
        ]
    }
}
