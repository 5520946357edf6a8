package import RevSyncProtocol

/// A kept log entry's body as each schema version's devices read it (``SchemaLens``), made the
/// first time a response to a device of that version holds it: under load, every device of an
/// older version gets the same few new entries, and translating each once (not once per
/// response) is what keeps their syncs nearly as cheap as the latest version's
/// (`docs/benchmarks.md`, "Old and new app versions").
final class LogEntryTranslations: Sendable {
    private let kept = Locked<[Int: [UInt8]]>([:])
    private let deflations = Locked<[Int: LogEntryDeflation]>([:])

    /// The box of the translated body's compressed form in `lens`'s version (``LogEntryDeflation``).
    func deflation(for lens: SchemaLens) -> LogEntryDeflation {
        deflations.withLock { boxes in
            if let box = boxes[lens.version] { return box }
            let box = LogEntryDeflation()
            boxes[lens.version] = box
            return box
        }
    }

    /// The body in `lens`'s version: kept, or made with `translate` and kept.
    func body(for lens: SchemaLens, _ translate: () throws -> [UInt8]) rethrows -> [UInt8] {
        if let known = kept.withLock({ $0[lens.version] }) { return known }
        // Made outside the lock: two responses at once may both make it, neither waits.
        let made = try translate()
        kept.withLock { if $0[lens.version] == nil { $0[lens.version] = made } }
        return made
    }
}

extension LogEntry {
    /// The change set as a device of `lens`'s version reads it: translated once per version
    /// while the store keeps the entry in memory (every answer and live event use this).
    package func body(in lens: SchemaLens) throws -> [UInt8] {
        let translate = {
            do {
                return lens.toDevice(try ChangeSet(json: body, sender: .server)).jsonBytes()
            } catch {
                throw StorageError.corrupt("change log entry \(revision) does not decode: \(error)")
            }
        }
        return try translations?.body(for: lens, translate) ?? translate()
    }
}
