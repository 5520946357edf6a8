import Hummingbird
import Logging
import NIOCore
import RevSyncEngine

/// The context of a signed-in console request: the server's context, the operator's session,
/// and forms decoded as `application/x-www-form-urlencoded` (at most 64 KB).
///
/// Made from a ``RevSyncRequestContext`` that ``ConsoleSessionMiddleware`` gave a session: the
/// console's routes cannot be reached without one.
struct ConsoleRequestContext: ChildRequestContext {
    typealias ParentContext = RevSyncRequestContext

    var coreContext: CoreRequestContextStorage
    /// The request's context as the server made it (its address, what it learnt).
    let base: RevSyncRequestContext
    let session: ConsoleSessions.Current

    init(context: RevSyncRequestContext) throws {
        guard let session = context.consoleSession else { throw HTTPError(.unauthorized) }
        coreContext = context.coreContext
        base = context
        self.session = session
    }

    var requestDecoder: URLEncodedFormDecoder { URLEncodedFormDecoder() }
    var maxUploadSize: Int { 64 * 1024 }
}
