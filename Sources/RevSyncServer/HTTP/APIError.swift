import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import RevSyncEngine
import RevSyncProtocol

/// An error answered as JSON: `{"error": {"code": "...", "message": "...", "path": "..."}}`.
struct APIError: Error, Sendable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var path: String?
    var headers: HTTPFields = [:]

    init(status: HTTPResponse.Status, code: String, message: String, path: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.headers = headers
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(status: .unauthorized, code: "unauthorized", message: message, headers: [.wwwAuthenticate: "Bearer"])
    }

    /// `410 device_wiped`: the token was revoked with an order to wipe the device. Every request
    /// of it gets this answer, whatever it asks; the one it may still make is its receipt
    /// (`POST /wipe-receipt`).
    static let deviceWiped = APIError(
        status: .gone, code: "device_wiped",
        message:
            "this device's token was revoked with an order to wipe it: remove every record RevSync keeps for it, then send the receipt (POST /wipe-receipt)"
    )

    static func tooLarge(_ message: String) -> APIError {
        APIError(status: .contentTooLarge, code: "body_too_large", message: message)
    }

    /// The response for any error a request may end in; unknown errors are logged and
    /// answered 500 without details.
    static func response(for error: any Error, logger: Logger) -> Response {
        let (status, headers, body) = rendered(error, logger: logger)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The status, headers and JSON body an error is answered with.
    static func rendered(_ error: any Error, logger: Logger) -> (status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8]) {
        let apiError: APIError
        switch error {
        case let error as APIError:
            apiError = error
        case let error as ProtocolError:
            apiError = APIError(
                status: error.isTooLarge ? .contentTooLarge : .badRequest, code: error.code.rawValue, message: error.message,
                path: error.path)
        case let error as HTTPParserError:
            // The request's framing is broken (chunk sizes, transfer codings, lengths), or the
            // client went away mid-request: the client's doing, never a server failure.
            switch error {
            case .invalidEOFState, .closedConnection:
                logger.debug("the client disconnected before the end of its request")
                apiError = APIError(status: .badRequest, code: "incomplete_request", message: "the request ended before its body did")
            default:
                logger.info("malformed HTTP framing: \(error)")
                apiError = APIError(
                    status: .badRequest, code: "invalid_framing", message: "the request's HTTP framing is invalid: \(error)")
            }
        case let error as SyncError:
            switch error {
            case .revisionAhead: apiError = APIError(status: .badRequest, code: error.code, message: error.description)
            case .tooLarge: apiError = APIError(status: .contentTooLarge, code: error.code, message: error.description)
            case .unauthorized: apiError = APIError.unauthorized(error.description)
            case .schemaAhead: apiError = APIError(status: .conflict, code: error.code, message: error.description)
            case .upgradeRequired:
                apiError = APIError(
                    status: HTTPResponse.Status(code: 426, reasonPhrase: "Upgrade Required"), code: error.code, message: error.description)
            }
        case let error as HTTPError:
            let code = error.status == .notFound ? "not_found" : error.status.reasonPhrase.lowercased().replacing(" ", with: "_")
            apiError = APIError(status: error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        case let error as StorageError:
            logger.error("storage error: \(error)")
            if case .unavailable = error {
                apiError = APIError(
                    status: .serviceUnavailable, code: "unavailable", message: "the database is unavailable; try again later")
            } else {
                apiError = APIError(status: .internalServerError, code: "internal", message: "the server failed to process the request")
            }
        default:
            logger.error("request failed: \(String(reflecting: error))")
            apiError = APIError(status: .internalServerError, code: "internal", message: "the server failed to process the request")
        }
        var writer = JSONWriter()
        writer.writeRaw("{\"error\":{\"code\":")
        writer.writeString(apiError.code)
        writer.writeRaw(",\"message\":")
        writer.writeString(apiError.message)
        if let path = apiError.path {
            writer.writeRaw(",\"path\":")
            writer.writeString(path)
        }
        writer.writeRaw("}}")
        var headers = apiError.headers
        headers[.contentType] = "application/json"
        return (apiError.status, headers, writer.bytes)
    }
}

extension APIError {
    /// A refused revert: `404 not_found`, or `409` with why.
    init(_ refusal: ChangeSetRevert.Refusal) {
        switch refusal {
        case .notFound: self.init(status: .notFound, code: "not_found", message: refusal.description)
        case .ambiguous: self.init(status: .conflict, code: "ambiguous_change_set", message: refusal.description)
        case .laterChanges: self.init(status: .conflict, code: "later_changes", message: refusal.description)
        case .impossible: self.init(status: .conflict, code: "cannot_revert", message: refusal.description)
        }
    }

    init(_ refusal: RecordErasure.Refusal) {
        switch refusal {
        case .notFound: self.init(status: .notFound, code: "not_found", message: refusal.description)
        case .invalid: self.init(status: .badRequest, code: "invalid_erasure", message: refusal.description)
        case .denied: self.init(status: .conflict, code: "delete_denied", message: refusal.description)
        }
    }
}
