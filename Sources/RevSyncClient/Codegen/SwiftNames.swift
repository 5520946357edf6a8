public import RevSyncProtocol

/// The Swift names `revsync generate swift` gives a schema's entities, attributes and
/// references, and the check that they make valid Swift together.
///
/// - a type is the entity name split on `_`, its last word made singular (`ies` → `y`, a final
///   `s` dropped, `ss` kept), in UpperCamelCase: `team_players` → `TeamPlayer`; the entity's
///   `"swiftName"` in the schema overrides it;
/// - a property is the attribute name in lowerCamelCase with the word `id` written `ID`:
///   `team_id` → `teamID`; a Swift keyword is escaped with backticks, as Swift wants it (a property `default`);
/// - a `belongsTo` association per reference is named after the attribute without `_id`:
///   `team_id` → `team`, `recorded_by` → `recordedBy`.
///
/// Names that would not compile are refused by ``check(_:)`` with a message naming both sides:
/// two entities or attributes that become one Swift name (`team` and `teams`, `a_b` and
/// `a__b`), a type that hides one the generated file uses (`strings` → `String`), or a
/// `swiftName` that is a keyword (`Self`).
public enum SwiftNames {
    /// Why a schema's Swift types cannot be generated: two names collide, or a name is one the
    /// file needs for itself.
    public struct Collision: Error, CustomStringConvertible, Sendable, Equatable {
        /// What collides, naming both sides: `entities team and teams would both be the Swift
        /// type Team: give one of them a swiftName`.
        public let message: String
        public var description: String { message }
    }

    /// The Swift type name of `entity`.
    public static func typeName(of entity: Entity) -> String {
        if let swiftName = entity.swiftName { return swiftName }
        var words = entity.name.split(separator: "_").map(String.init)
        if let last = words.popLast() { words.append(singular(last)) }
        return escaped(words.map(capitalized).joined(), asType: true)
    }

    /// The Swift property name of attribute `name`, in backticks where it is a keyword.
    public static func propertyName(_ name: String) -> String {
        let words = name.split(separator: "_").map(String.init)
        let camel = words.enumerated().map { index, word in
            if word == "id" { return index == 0 ? "id" : "ID" }
            return index == 0 ? word : capitalized(word)
        }.joined()
        return escaped(camel, asType: false)
    }

    /// The name of the association a reference attribute gives.
    public static func associationName(_ attribute: String) -> String {
        let base = attribute.hasSuffix("_id") && attribute.count > 3 ? String(attribute.dropLast(3)) : attribute
        return propertyName(base)
    }

    /// A name without the backticks it may need, for messages, keys and labels.
    public static func bare(_ name: String) -> String {
        String(name.filter { $0 != "`" })
    }

    static func singular(_ word: String) -> String {
        if word.hasSuffix("ies"), word.count > 3 { return String(word.dropLast(3)) + "y" }
        if word.hasSuffix("ss") { return word }
        if word.hasSuffix("s"), word.count > 1 { return String(word.dropLast()) }
        return word
    }

    private static func capitalized(_ word: String) -> String {
        word.prefix(1).uppercased() + word.dropFirst()
    }

    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout", "internal",
        "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows", "static", "struct",
        "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough",
        "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while", "as", "false", "is", "nil",
        "self", "super", "throws", "true", "try", "await", "async", "any", "some", "consume", "borrowing", "consuming",
        "Self", "Type", "Protocol", "Any",
    ]

    /// Type names the generated file refers to: an entity's type must not hide them.
    static let typesTheFileUses: Set<String> = [
        "String", "Int64", "Double", "Bool", "Optional", "RecordID", "Revision", "Attachment", "Column", "Columns", "CodingKeys",
        "CodingKey", "Row", "PersistenceContainer", "ForeignKey", "Database", "RevSyncRecord", "Codable", "Hashable",
        "Sendable", "Identifiable", "GRDB", "RevSyncClient", "Swift", "BelongsToAssociation",
    ]

    /// Property names every generated record has already.
    static let propertiesEveryRecordHas: Set<String> = ["id", "revision"]

    /// Static members every generated record has already (its associations must differ).
    static let staticsEveryRecordHas: Set<String> = ["databaseTableName", "Columns", "CodingKeys"]

    private static func escaped(_ name: String, asType: Bool) -> String {
        let first = name.first.map { $0.isNumber } ?? true
        if first { return (asType ? "T" : "_") + name }
        return keywords.contains(name) ? "`\(name)`" : name
    }

    /// Checks that `schema`'s names make valid Swift together.
    ///
    /// - Throws: ``Collision``, naming what collides and how to fix it.
    public static func check(_ schema: Schema) throws(Collision) {
        var types: [String: String] = [:]
        for entity in schema.entities {
            let type = typeName(of: entity)
            let bareType = bare(type)
            let origin = entity.swiftName == nil ? "entity \(entity.name)" : "entity \(entity.name) (swiftName \(bareType))"
            if keywords.contains(bareType) || type != bareType {
                throw Collision(message: "\(origin) would be the Swift type \(bareType), a Swift keyword: give it another swiftName")
            }
            if typesTheFileUses.contains(bareType) {
                throw Collision(
                    message:
                        "\(origin) would be the Swift type \(bareType), which hides the \(bareType) the generated file uses: give the entity a swiftName"
                )
            }
            if let other = types[bareType] {
                throw Collision(
                    message: "entities \(other) and \(entity.name) would both be the Swift type \(bareType): give one of them a swiftName")
            }
            types[bareType] = entity.name
            var properties: [String: String] = [:]
            for name in propertiesEveryRecordHas { properties[name] = "the record's own \(name)" }
            var statics: [String: String] = [:]
            for name in staticsEveryRecordHas { statics[name] = "the record's own \(name)" }
            for attribute in entity.attributes {
                let property = bare(propertyName(attribute.name))
                if let other = properties[property] {
                    throw Collision(
                        message:
                            "entity \(entity.name): attribute \(attribute.name) and \(other.hasPrefix("the record") ? other : "attribute \(other)") would both be the Swift property \(property) of \(bareType): rename one of the attributes"
                    )
                }
                properties[property] = attribute.name
            }
            for attribute in entity.attributes where attribute.referenceTarget != nil {
                let association = bare(associationName(attribute.name))
                if let other = statics[association] {
                    throw Collision(
                        message:
                            "entity \(entity.name): the association of \(attribute.name) and \(other.hasPrefix("the record") ? other : "the association of \(other)") would both be \(bareType).\(association): rename one of the attributes"
                    )
                }
                statics[association] = attribute.name
            }
        }
    }
}
