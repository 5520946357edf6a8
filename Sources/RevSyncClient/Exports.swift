// What app code needs with `import RevSyncClient` alone: the wire types (`RecordID`,
// `Revision`, `Value`, `Schema`) and GRDB, whose records, query interface and
// `ValueObservation` are the typed API's own.
@_exported public import GRDB
@_exported public import RevSyncProtocol
