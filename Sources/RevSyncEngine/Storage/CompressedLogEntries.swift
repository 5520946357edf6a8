package import RevSyncProtocol

/// The compressed forms of a committed log entry, made once and spliced into every gzip
/// response that carries the entry (``Gzip/splice(_:pieces:gapLevel:)``).
///
/// Nearly every sync is answered with the few change sets committed since the device's last
/// one, and each of them goes to every other device: compressing every response whole
/// compressed each entry once per device, a sixth of the server's CPU under load. An entry the
/// store keeps in memory (``RecentLog``) carries one of these, so its bytes are compressed once
/// and copied after that. An entry compressed on its own would lose what it shares with its
/// neighbours (the same keys and shapes: three to four times the bytes of a response compressed
/// whole), so it is compressed after the entry one revision older, which a response nearly
/// always holds right before it: its back references may reach into that one. Each entry
/// still carries its own Huffman tables: a response of ~50 small entries is about 1.6 times
/// the bytes of the response compressed whole. The first entry of a response (and any that
/// does not follow the one before it) goes with the bytes around it.
final class LogEntryDeflation: Sendable {
    private let kept = Locked<[UInt8]?>(nil)
    /// Compressed once, copied into many responses: worth zlib's default level.
    static let level: Int32 = 6

    /// A comma and `body`, compressed to follow `previous`: the body of the entry one revision
    /// older, which never changes, so the form holds wherever that entry comes right before.
    func afterPrevious(_ body: [UInt8], previous: [UInt8]) -> [UInt8] {
        if let kept = kept.current { return kept }
        // Made outside the lock: two responses at once may both make it, neither waits.
        let made = Gzip.deflatePiece([UInt8(ascii: ",")] + body, after: previous, level: Self.level)
        kept.withLock { if $0 == nil { $0 = made } }
        return made
    }
}

/// Where a response's body holds a kept log entry as it is, right after the entry one revision
/// older, to be spliced in compressed.
package struct CompressedSpan: Sendable {
    /// The entry's bytes in the body, with the comma before them.
    package var range: Range<Int>
    var body: [UInt8]
    var deflation: LogEntryDeflation
    /// The body of the entry one revision older, which the range follows.
    var previous: [UInt8]

    package var piece: Gzip.Piece { Gzip.Piece(range: range, deflated: deflation.afterPrevious(body, previous: previous)) }
}
