import RevSyncProtocol

/// libFuzzer's entry point: every input is a request body, a response body, a schema file
/// and a gzip stream at once.
///
/// Beyond "never crashes, never hangs": a request that decodes encodes to bytes that decode
/// to the same request (the encoder writes what the decoder accepts).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let request = try? SyncMessage(json: bytes, sender: .client) {
        guard let again = try? SyncMessage(json: request.jsonBytes(), sender: .client), again == request else {
            fatalError("a decoded request does not survive encoding: \(request)")
        }
    }
    if let response = try? SyncMessage(json: bytes, sender: .server) {
        guard let again = try? SyncMessage(json: response.jsonBytes(), sender: .server), again == response else {
            fatalError("a decoded response does not survive encoding: \(response)")
        }
    }
    if let schema = try? Schema(json: bytes) {
        guard let again = try? Schema(json: schema.jsonBytes()), again == schema else {
            fatalError("a loaded schema does not survive encoding")
        }
    }
    _ = try? Value(json: String(decoding: bytes, as: UTF8.self))
    _ = try? Gzip.decompress(bytes, limit: 1 << 20)
    return 0
}

/// libFuzzer's driver, which runs the fuzzing loop with the command line's options.
@_silgen_name("LLVMFuzzerRunDriver")
func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// SwiftPM links an executable's `main` to `<module>_main`: hand it to libFuzzer's driver.
@_cdecl("RevSyncDecoderFuzzer_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return llvmFuzzerRunDriver(&count, &arguments) { data, size in fuzz(data, size) }
}
