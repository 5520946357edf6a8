import Foundation
import RevSyncProtocol

/// A large response (one applied while it arrives: a full sync, a long catch-up) decoded on a
/// thread of its own while the store's writer applies what was decoded: decompressing, reading
/// the JSON and hashing each record (for the store's digest) on one core, writing SQLite on
/// the other. A full sync of a million records took about 60 % of the time it took on the
/// writer alone.
///
/// What the decoder reads is handed over in order, in batches, through a buffer of bounded
/// size (``capacity`` records): the device holds a window of the response, never all of it.
/// A decoding error is thrown to the writer where the decoder stopped; a writer that stops
/// (its transaction failed) stops the thread at its next batch.
final class ResponseDecodingThread: @unchecked Sendable {
    // Safe: every field below is read and written under `condition`'s lock, but `batch`, which
    // only the decoding thread touches.
    private let condition = NSCondition()
    private var batches: [[Event]] = []
    private var waiting = 0
    private var end: Result<SyncMessage, any Error>?
    private var abandoned = false
    private var batch: [Event] = []

    /// What the decoder read, in order.
    enum Event {
        case snapshotBegins(ChangeSet)
        /// A record of a snapshot, with its hash as the store's schema sees it (`nil`: an entity
        /// the store's schema lacks).
        case record(entity: String, id: RecordID, attributes: RecordAttributes, hash: RecordHash?)
        case changeSet(ChangeSet)
    }

    /// The writer stopped reading: the decoding thread stops.
    struct Abandoned: Error {}

    /// The most records waiting to be applied.
    let capacity: Int
    private let batchSize: Int

    /// Starts decoding the body `next` hands over (`nil` at its end), hashing records with
    /// `hashers`.
    init(reading next: @escaping @Sendable () throws -> [UInt8]?, hashers: SchemaHashers, capacity: Int = 4_096, batchSize: Int = 256) {
        self.capacity = capacity
        self.batchSize = batchSize
        let thread = Thread { [self] in
            let result = Result {
                try SyncMessage.decodeResponse(
                    reading: next,
                    snapshotBegins: { try self.hand(.snapshotBegins($0), flush: true) },
                    snapshotRecord: { entity, id, attributes in
                        let hash = hashers[entity].map { $0.hash(id: id, revision: attributes.revision ?? -1, values: attributes.values) }
                        try self.hand(.record(entity: entity, id: id, attributes: attributes, hash: hash), flush: false)
                    },
                    changeSet: { try self.hand(.changeSet($0), flush: true) })
            }
            self.finish(result)
        }
        thread.name = "revsync-response-decoder"
        thread.start()
    }

    // MARK: The decoding thread's side

    private func hand(_ event: Event, flush: Bool) throws {
        batch.append(event)
        guard flush || batch.count >= batchSize else { return }
        let handed = batch
        batch = []
        condition.lock()
        defer { condition.unlock() }
        while waiting >= capacity && !abandoned { condition.wait() }
        guard !abandoned else { throw Abandoned() }
        batches.append(handed)
        waiting += handed.count
        condition.broadcast()
    }

    private func finish(_ result: Result<SyncMessage, any Error>) {
        let rest = batch
        batch = []
        condition.lock()
        defer { condition.unlock() }
        if !rest.isEmpty, case .success = result { batches.append(rest) }
        end = result
        condition.broadcast()
    }

    // MARK: The writer's side

    /// The next events, in order; `nil` once every one was handed over.
    ///
    /// - Throws: the decoder's error (a malformed body, a cut-off connection) where it stopped.
    func next() throws -> [Event]? {
        condition.lock()
        defer { condition.unlock() }
        while batches.isEmpty && end == nil { condition.wait() }
        if !batches.isEmpty {
            let handed = batches.removeFirst()
            waiting -= handed.count
            condition.broadcast()
            return handed
        }
        if case .failure(let error) = end { throw error }
        return nil
    }

    /// The message once every event was taken (its revision, digest).
    func message() throws -> SyncMessage {
        condition.lock()
        defer { condition.unlock() }
        while end == nil { condition.wait() }
        return try end!.get()
    }

    /// The writer reads no more: the decoding thread stops at its next batch.
    func abandon() {
        condition.lock()
        defer { condition.unlock() }
        abandoned = true
        batches = []
        waiting = 0
        condition.broadcast()
    }
}
