/// Reads, inside one read transaction: every concern's reads (``LogReading``,
/// ``RecordReading``, ``OutcomeReading``, ``DeviceReading``, ``HistoryReading``,
/// ``ConsoleSessionReading``, ``DataSetReading``).
public protocol StorageReader: LogReading, RecordReading, OutcomeReading, DeviceReading, HistoryReading, ConsoleSessionReading,
    DataSetReading, AttachmentReading, ErasureReading, WipeReading
{}

/// Writes, by the one writer: every concern's writes, and the transactions they happen in
/// (``TransactionWriting``). Every change to synchronised data happens inside
/// ``TransactionWriting/transaction(_:)``; the revision counter is locked by
/// ``LogWriting/lockRevision()``.
public protocol StorageWriter: StorageReader, TransactionWriting, LogWriting, RecordWriting, OutcomeWriting, DeviceWriting,
    HistoryWriting, ConsoleSessionWriting, AttachmentWriting, AttachmentRetaining, ErasureWriting, WipeWriting
{}
