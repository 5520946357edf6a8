public import GRDB
public import RevSyncProtocol

/// An `Attachment` is stored as its JSON object, as on the wire, so that GRDB reads and
/// writes it in `attachment` columns (the generated types' `Attachment?` properties).
extension Attachment: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { json.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Attachment? {
        String.fromDatabaseValue(dbValue).flatMap { try? Attachment(json: $0) }
    }
}
