/// The data model, declared once and loaded by the server and every client.
///
/// A schema names entities, their attributes with types, which attributes are required, and
/// references with their target entity and delete rule. Each entity becomes a table with an
/// integer `id`, a `revision` and one column per attribute.
///
/// For example, loading the JSON format of `docs/schema.md`:
///
/// ```swift
/// let schema = try Schema(json: Array(data))
/// let teams = schema.entity("teams")!
/// for reference in schema.references(to: "teams") {
///     print(reference.entity, reference.attribute, reference.rule)   // team_players team_id cascade
/// }
/// ```
public struct Schema: Sendable, Hashable {
    /// Increases with every change to the schema.
    public let version: Int
    /// The entities, in declaration order.
    public let entities: [Entity]
    /// The entity whose records are the people devices belong to (a token may be linked to
    /// one), which `"$user"` in permission rules names; `nil` if the schema has none.
    public let users: String?
    /// The roles this schema declares, besides the built-in `admin`, `member` and `viewer`.
    public let roles: [Role]
    /// The oldest schema version devices may still speak (`"minimumVersion"` in the file): an
    /// older device is answered `426 upgrade_required`. `nil`: every version the database served.
    public let minimumVersion: Int?
    /// The offline lease (`"maxOfflineDays"` in the file): a device whose store has not heard
    /// from the server for longer than this many days wipes the store when it opens (protocol
    /// section 16). `nil`: none. `revsync-server serve --max-offline-days` overrides it.
    public let maxOfflineDays: Int?
    private let entityIndex: [String: Int]
    private let incoming: [String: [IncomingReference]]

    /// Creates a schema, checking every rule of a valid schema.
    ///
    /// - Throws: ``SchemaError`` naming the first broken rule and where it is.
    public init(
        version: Int, entities: [Entity], users: String? = nil, roles: [Role] = [], minimumVersion: Int? = nil
    )
        throws(SchemaError)
    {
        try self.init(version: version, entities: entities, users: users, roles: roles, minimumVersion: minimumVersion, maxOfflineDays: nil)
    }

    /// Creates a schema with an offline lease (``maxOfflineDays``, 1 to 3,650 days), checking
    /// every rule of a valid schema.
    ///
    /// - Throws: ``SchemaError`` naming the first broken rule and where it is.
    public init(
        version: Int, entities: [Entity], users: String? = nil, roles: [Role] = [], minimumVersion: Int? = nil, maxOfflineDays: Int?
    )
        throws(SchemaError)
    {
        if let maxOfflineDays, !(1...3650).contains(maxOfflineDays) {
            throw SchemaError("maxOfflineDays must be from 1 to 3650 days", path: "maxOfflineDays")
        }
        guard version >= 1 else { throw SchemaError("version must be 1 or more", path: "version") }
        if let minimumVersion, minimumVersion < 1 || minimumVersion > version {
            throw SchemaError("minimumVersion must be from 1 to the schema's version (\(version))", path: "minimumVersion")
        }
        guard !entities.isEmpty else { throw SchemaError("a schema needs at least one entity", path: "entities") }
        var index: [String: Int] = [:]
        for (position, entity) in entities.enumerated() {
            let path = "entities.\(entity.name)"
            guard Names.isValid(entity.name) else {
                throw SchemaError("\"\(entity.name)\" is not a valid entity name (^[a-z][a-z0-9_]{0,62}$)", path: path)
            }
            guard !Names.reservedChangeSetKeys.contains(entity.name) else {
                throw SchemaError("\"\(entity.name)\" is reserved by the wire format", path: path)
            }
            guard !entity.name.hasPrefix("sqlite_"), !entity.name.hasPrefix("pg_") else {
                throw SchemaError("names starting with sqlite_ or pg_ are reserved by the databases", path: path)
            }
            guard index.updateValue(position, forKey: entity.name) == nil else {
                throw SchemaError("entity \"\(entity.name)\" is declared twice", path: path)
            }
        }
        var incoming: [String: [IncomingReference]] = [:]
        for entity in entities {
            for (position, attribute) in entity.attributes.enumerated() {
                guard case .reference(let target, let rule) = attribute.type else { continue }
                let path = "entities.\(entity.name).attributes.\(attribute.name)"
                guard index[target] != nil else {
                    throw SchemaError("reference target \"\(target)\" is not an entity of this schema", path: path)
                }
                if rule == .nullify && attribute.isRequired {
                    throw SchemaError("a required reference cannot use the nullify delete rule", path: path)
                }
                incoming[target, default: []].append(
                    IncomingReference(entity: entity.name, attribute: attribute.name, attributeIndex: position, rule: rule))
            }
        }
        if let users, index[users] == nil {
            throw SchemaError("\"\(users)\" is not an entity of this schema", path: "users")
        }
        var declared = Set<Role>()
        for role in roles {
            guard Names.isValid(role.rawValue) else {
                throw SchemaError("\"\(role)\" is not a valid role name (^[a-z][a-z0-9_]{0,62}$)", path: "roles")
            }
            guard !Role.builtIn.contains(role) else { throw SchemaError("\"\(role)\" is a built-in role", path: "roles") }
            guard declared.insert(role).inserted else { throw SchemaError("role \"\(role)\" is declared twice", path: "roles") }
        }
        self.version = version
        self.entities = entities
        self.entityIndex = index
        self.incoming = incoming
        self.users = users
        self.roles = roles
        self.minimumVersion = minimumVersion
        self.maxOfflineDays = maxOfflineDays
        try checkPermissions()
    }

    /// This schema at `version`, with the entities `names` judged with `staleness`: how a schema
    /// upgrade switches entities between record and attribute staleness, and how tests,
    /// the simulator and the benchmarks make variants of the demo schema.
    public func setting(_ staleness: Staleness, for names: Set<String>, version: Int) throws(SchemaError) -> Schema {
        try changing(version: version) { entity throws(SchemaError) in
            names.contains(entity.name) ? try entity.with(staleness: staleness) : entity
        }
    }

    /// This schema at `version`, each entity as `change` makes it (users, roles,
    /// `minimumVersion` and `maxOfflineDays` kept): how a later version is written from an
    /// earlier one in code.
    public func changing(version: Int, _ change: (Entity) throws(SchemaError) -> Entity) throws(SchemaError) -> Schema {
        var changed: [Entity] = []
        for entity in entities { changed.append(try change(entity)) }
        return try Schema(
            version: version, entities: changed, users: users, roles: roles, minimumVersion: minimumVersion,
            maxOfflineDays: maxOfflineDays)
    }

    /// Whether any entity has an `attachment` attribute.
    public var hasAttachments: Bool {
        entities.contains { $0.attributes.contains { $0.type == .attachment } }
    }

    /// Every role a token of this data set may have.
    public var allRoles: [Role] { Role.builtIn + roles }

    /// Whether `role` is built in or declared by this schema.
    public func knows(_ role: Role) -> Bool {
        Role.builtIn.contains(role) || roles.contains(role)
    }

    /// Whether any entity or attribute has a permission rule (without any, every role but
    /// `viewer` may change everything).
    public var hasPermissions: Bool {
        entities.contains { $0.permissions != nil || $0.attributes.contains { $0.writeRoles != nil } }
    }

    /// Checks the roles and paths of every rule.
    private func checkPermissions() throws(SchemaError) {
        for entity in entities {
            for attribute in entity.attributes {
                for role in attribute.writeRoles ?? [] where !knows(role) {
                    throw SchemaError(
                        "unknown role \"\(role)\" (declare it in \"roles\")",
                        path: "entities.\(entity.name).attributes.\(attribute.name).write")
                }
            }
            guard let permissions = entity.permissions else { continue }
            for (operation, entries) in permissions.rules {
                let path = "entities.\(entity.name).permissions.\(operation.rawValue)"
                for entry in entries {
                    guard knows(entry.role) || (entry.role == .anyone && !entry.conditions.isEmpty) else {
                        throw SchemaError(
                            entry.role == .anyone
                                ? "\"*\" needs a \"where\"" : "unknown role \"\(entry.role)\" (declare it in \"roles\")", path: path)
                    }
                    for condition in entry.conditions {
                        guard users != nil else { throw SchemaError("\"$user\" needs the schema's \"users\" entity", path: path) }
                        try checkPath(condition.path, in: entity, at: path)
                    }
                }
            }
        }
    }

    /// The most references a condition's path may follow (`training_session_id.team_id.coach_id`
    /// follows two).
    public static let maxPathReferences = 3

    /// A path is zero or more reference attributes, each followed to its target, then an
    /// attribute (or `id`) of the record reached.
    private func checkPath(_ components: [String], in entity: Entity, at path: String) throws(SchemaError) {
        let text = components.joined(separator: ".")
        guard components.count - 1 <= Self.maxPathReferences else {
            throw SchemaError("\"\(text)\" follows more than \(Self.maxPathReferences) references", path: path)
        }
        var current = entity
        for component in components.dropLast() {
            guard let target = current.attribute(component)?.referenceTarget, let next = self.entity(target) else {
                throw SchemaError("\"\(component)\" in \"\(text)\" is not a reference of \(current.name)", path: path)
            }
            current = next
        }
        let last = components[components.count - 1]
        guard last == "id" || current.attribute(last) != nil else {
            throw SchemaError(
                components.count == 1
                    ? "\"\(text)\" is not an attribute of \(entity.name)" : "\(current.name) has no attribute \"\(last)\" (in \"\(text)\")",
                path: path)
        }
    }

    /// The entity named `name`, if the schema has one.
    public func entity(_ name: String) -> Entity? {
        entityIndex[name].map { entities[$0] }
    }

    /// Every reference attribute, in any entity, whose target is `entity`: what a delete of
    /// one of its records affects.
    public func references(to entity: String) -> [IncomingReference] {
        incoming[entity] ?? []
    }
}

/// A reference attribute seen from the entity it points to.
public struct IncomingReference: Sendable, Hashable {
    /// The entity holding the reference.
    public let entity: String
    /// The reference attribute.
    public let attribute: String
    /// The attribute's position in its entity.
    public let attributeIndex: Int
    /// What a delete of the target does to records holding the reference.
    public let rule: DeleteRule
}

/// An entity: one table of records.
public struct Entity: Sendable, Hashable {
    public let name: String
    /// The attributes, in declaration order (the order of columns and of stored values).
    public let attributes: [Attribute]
    /// Documentation for people reading the schema.
    public let summary: String?
    /// Who may create, update and delete its records; `nil`: every role but `viewer`.
    public let permissions: EntityPermissions?
    /// The name of the Swift type `revsync generate swift` writes for it, when the schema
    /// overrides the one derived from ``name`` (`team_players` → `TeamPlayer`).
    public let swiftName: String?
    /// What makes an update stale: another device's change to the record, or only to an
    /// attribute the update writes.
    public let staleness: Staleness
    /// The positions of ``attributes`` in ascending order of name, retained ones left out (a
    /// record's hash writes them in this order: ``RecordHasher``).
    public let positionsByName: [Int]
    /// The entity's name in the schema version before this one, when this version renames it
    /// (`"renamedFrom"`; kept in later versions as history, where it changes nothing).
    public let renamedFrom: String?
    private let attributeIndex: [String: Int]

    /// Creates an entity, checking its attribute names.
    public init(
        name: String, attributes: [Attribute], summary: String? = nil, permissions: EntityPermissions? = nil,
        swiftName: String? = nil, staleness: Staleness = .record, renamedFrom: String? = nil
    )
        throws(SchemaError)
    {
        if let renamedFrom, !Names.isValid(renamedFrom) || renamedFrom == name {
            throw SchemaError("\"\(renamedFrom)\" is not another valid entity name", path: "entities.\(name).renamedFrom")
        }
        if let swiftName, !Names.isSwiftTypeName(swiftName) {
            throw SchemaError(
                "\"\(swiftName)\" is not a Swift type name (^[A-Z][A-Za-z0-9_]{0,62}$)", path: "entities.\(name).swiftName")
        }
        var index: [String: Int] = [:]
        for (position, attribute) in attributes.enumerated() {
            let path = "entities.\(name).attributes.\(attribute.name)"
            guard Names.isValid(attribute.name) else {
                throw SchemaError("\"\(attribute.name)\" is not a valid attribute name (^[a-z][a-z0-9_]{0,62}$)", path: path)
            }
            guard attribute.name != "id", attribute.name != "revision" else {
                throw SchemaError("\"\(attribute.name)\" is reserved: every record has an id and a revision", path: path)
            }
            guard index.updateValue(position, forKey: attribute.name) == nil else {
                throw SchemaError("attribute \"\(attribute.name)\" is declared twice", path: path)
            }
            if let renamedFrom = attribute.renamedFrom, !Names.isValid(renamedFrom) || renamedFrom == attribute.name {
                throw SchemaError("\"\(renamedFrom)\" is not another valid attribute name", path: "\(path).renamedFrom")
            }
            if let value = attribute.defaultValue {
                if attribute.type.referenceTarget != nil || attribute.type == .attachment || value.isNull {
                    throw SchemaError("a default is a non-null integer, real, text, boolean or date value", path: "\(path).default")
                }
                if case .failure(let refusal) = attribute.accept(value) {
                    throw SchemaError("the default does not fit: \(refusal.message)", path: "\(path).default")
                }
            }
        }
        self.name = name
        self.attributes = attributes
        self.summary = summary
        self.permissions = permissions
        self.swiftName = swiftName
        self.staleness = staleness
        self.renamedFrom = renamedFrom
        self.attributeIndex = index
        self.positionsByName = attributes.indices.filter { !attributes[$0].isRetained }.sorted {
            attributes[$0].name < attributes[$1].name
        }
    }

    public func attribute(_ name: String) -> Attribute? {
        attributeIndex[name].map { attributes[$0] }
    }

    /// The same entity with what is given changed (`nil`: as it is).
    public func with(
        name: String? = nil, attributes: [Attribute]? = nil, staleness: Staleness? = nil, renamedFrom: String? = nil
    ) throws(SchemaError) -> Entity {
        try Entity(
            name: name ?? self.name, attributes: attributes ?? self.attributes, summary: summary, permissions: permissions,
            swiftName: swiftName, staleness: staleness ?? self.staleness, renamedFrom: renamedFrom ?? self.renamedFrom)
    }

    /// The position of attribute `name` in ``attributes``.
    public func index(of name: String) -> Int? {
        attributeIndex[name]
    }
}

/// When an update of an entity's record is stale, so refused: another device changed the
/// record after the update's base revision (``record``, the default), or changed one of the
/// attributes the update writes (``attribute``; updates of other attributes both commit).
///
/// Deletes, and the records a delete cascades to or nullifies, are judged by the record either
/// way: a record changed after the base revision is never deleted unseen.
public enum Staleness: String, Sendable, Hashable, CaseIterable {
    case record
    case attribute
}

/// One attribute of an entity.
public struct Attribute: Sendable, Hashable {
    public let name: String
    public let type: AttributeType
    /// A required attribute must be given on create and can never be null.
    public let isRequired: Bool
    /// Documentation for people reading the schema.
    public let summary: String?
    /// The roles that may set it on create or change it on update (besides `admin`); `nil`:
    /// whoever may create or update the record.
    public let writeRoles: [Role]?
    /// The attribute's name in the schema version before this one, when this version renames
    /// it (`"renamedFrom"`; kept in later versions as history, where it changes nothing).
    public let renamedFrom: String?
    /// The value records that lack the attribute get (`"default"`): existing records when it is
    /// added, and records created by devices whose schema version does not have it.
    public let defaultValue: Value?
    /// Whether the attribute is one the latest schema version removed and an older version still
    /// served has (``SchemaLineage/storage``): stored, but not part of the latest version's
    /// records (their hash leaves it out).
    public let isRetained: Bool

    public init(
        name: String, type: AttributeType, isRequired: Bool = false, summary: String? = nil, writeRoles: [Role]? = nil,
        renamedFrom: String? = nil, defaultValue: Value? = nil, isRetained: Bool = false
    ) {
        self.isRetained = isRetained
        self.name = name
        self.type = type
        self.isRequired = isRequired
        self.summary = summary
        self.writeRoles = writeRoles
        self.renamedFrom = renamedFrom
        self.defaultValue = defaultValue
    }

    /// The target entity if this is a reference.
    public var referenceTarget: String? { type.referenceTarget }

    /// The same attribute with what is given changed (`nil`: as it is).
    public func with(name: String? = nil, type: AttributeType? = nil, renamedFrom: String? = nil) -> Attribute {
        Attribute(
            name: name ?? self.name, type: type ?? self.type, isRequired: isRequired, summary: summary, writeRoles: writeRoles,
            renamedFrom: renamedFrom ?? self.renamedFrom, defaultValue: defaultValue, isRetained: isRetained)
    }
}

/// The type of an attribute.
public enum AttributeType: Sendable, Hashable {
    /// A 64-bit integer.
    case integer
    /// A double-precision number; integers are accepted and stored as reals.
    case real
    /// UTF-8 text without U+0000.
    case text
    case boolean
    /// Text in the form the client sent, such as `2014-02-01 13:15:23.487+01`.
    case date
    /// The ID of a record of `target`, and what deleting that record does to this one.
    case reference(target: String, onDelete: DeleteRule)
    /// Bytes that travel beside the record: the value is an ``Attachment`` naming them by their
    /// SHA-256.
    case attachment

    /// The target entity if this is a reference.
    public var referenceTarget: String? {
        if case .reference(let target, _) = self { return target }
        return nil
    }

    /// The name used in the schema file.
    public var name: String {
        switch self {
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .boolean: "boolean"
        case .date: "date"
        case .reference: "reference"
        case .attachment: "attachment"
        }
    }
}

/// What deleting a record does to the records that reference it.
public enum DeleteRule: String, Sendable, Hashable {
    /// Delete them too (and so on, down the tree).
    case cascade
    /// Set their reference to null.
    case nullify
    /// Refuse the delete while any exist (a `constraint` conflict).
    case deny
}

/// A schema that breaks a rule, with where in the schema file the problem is.
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var path: String

    public init(_ message: String, path: String = "") {
        self.message = message
        self.path = path
    }

    public var description: String {
        path.isEmpty ? "schema error: \(message)" : "schema error at \(path): \(message)"
    }
}
