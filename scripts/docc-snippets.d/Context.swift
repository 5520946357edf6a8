// What the DocC articles' snippets take as given (the app's own values), declared so that each
// snippet type-checks against the built modules (scripts/docc-snippets). Nothing here runs.
import Foundation
import RevSyncClient
import RevSyncDemoRecords

var store: LocalStore { fatalError() }
var synchronizer: Synchronizer { fatalError() }
var path: String { fatalError() }
var server: URL { fatalError() }
var token: String { fatalError() }
var jpeg: Data { fatalError() }
var season: Season { fatalError() }
var player: Player { fatalError() }
var other: Player { fatalError() }
var db: Database { fatalError() }
var bundledSchema: Schema { fatalError() }

/// The app's token store (Getting started: the Keychain).
struct AppTokens {
    func token() throws -> String? { nil }
    /// Removes the token from the Keychain.
    func remove() throws {}
}

var tokens: AppTokens { fatalError() }
func showSignIn() {}
func render(_ players: [Player]) {}
func show(_ message: String) {}
func show(
    _ entity: String, _ id: RecordID, base: [String: Value], mine: [String: Value], theirs: [String: Value]?, changedByOthers: [String]
) {}
