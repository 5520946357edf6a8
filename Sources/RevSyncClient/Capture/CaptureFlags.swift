import Foundation
import GRDBSQLite

/// The capture's flags, in memory SQLite's C functions read (see `WriteCapture.flags`).
final class CaptureFlags: @unchecked Sendable {
    private let values: UnsafeMutablePointer<Int32>

    init() {
        // Three flags, then the nonce's 16 bytes (4 more Int32s).
        values = .allocate(capacity: 8)
        values.initialize(repeating: 0, count: 8)
    }

    var suspended: Bool {
        get { values[0] != 0 }
        set { values[0] = newValue ? 1 : 0 }
    }
    var journaling: Bool {
        get { values[1] != 0 }
        set { values[1] = newValue ? 1 : 0 }
    }
    var renaming: Bool {
        get { values[2] != 0 }
        set { values[2] = newValue ? 1 : 0 }
    }

    func reset(suspended: Bool) {
        self.suspended = suspended
        journaling = false
        renaming = false
    }

    /// Registers `revsync_capturing(nonce)`, `revsync_take_journaling(nonce)` and
    /// `revsync_renaming(nonce)`; without the nonce (app SQL) they are an error. The nonce's 16
    /// bytes follow the flags in the same memory, which is freed when SQLite drops the first of
    /// them (the connection closes).
    func install(on connection: OpaquePointer, nonce: String) throws {
        let bytes = Array(nonce.utf8)
        precondition(bytes.count == 16)
        UnsafeMutableRawPointer(values + 4).copyMemory(from: bytes, byteCount: 16)
        typealias Function = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void
        let functions: [(String, Function)] = [
            (
                "revsync_capturing",
                { context, count, arguments in
                    guard let values = CaptureFlags.checked(context, count, arguments) else { return }
                    sqlite3_result_int(context, values[0] == 0 ? 1 : 0)
                }
            ),
            (
                "revsync_take_journaling",
                { context, count, arguments in
                    guard let values = CaptureFlags.checked(context, count, arguments) else { return }
                    sqlite3_result_int(context, values[1])
                    values[1] = 0
                }
            ),
            (
                "revsync_renaming",
                { context, count, arguments in
                    guard let values = CaptureFlags.checked(context, count, arguments) else { return }
                    sqlite3_result_int(context, values[2])
                }
            ),
        ]
        for (index, (name, function)) in functions.enumerated() {
            let code = sqlite3_create_function_v2(
                connection, name, -1, SQLITE_UTF8, values, function, nil, nil,
                index == 0 ? { values in values?.assumingMemoryBound(to: Int32.self).deallocate() } : nil)
            guard code == SQLITE_OK else { throw LocalStoreError(.corrupt, "cannot install the write capture (\(name): \(code))") }
        }
    }

    /// The flags, when the one argument is the nonce; otherwise the call is answered with an
    /// error (app SQL calling RevSync's own function) and `nil`.
    private static func checked(
        _ context: OpaquePointer?, _ count: Int32, _ arguments: UnsafeMutablePointer<OpaquePointer?>?
    ) -> UnsafeMutablePointer<Int32>? {
        let values = sqlite3_user_data(context)!.assumingMemoryBound(to: Int32.self)
        guard count == 1, let argument = arguments?[0], sqlite3_value_bytes(argument) == 16, let text = sqlite3_value_text(argument),
            memcmp(text, UnsafeRawPointer(values + 4), 16) == 0
        else {
            sqlite3_result_error(context, "this is RevSync's own function: app SQL may not call it", -1)
            return nil
        }
        return values
    }
}
