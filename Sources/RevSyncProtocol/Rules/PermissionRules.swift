/// Who makes a change: a role, and the record of the schema's `users` entity the device
/// belongs to, if any.
public struct Actor: Sendable, Hashable {
    public var role: Role
    public var user: RecordID?

    public init(role: Role, user: RecordID?) {
        self.role = role
        self.user = user
    }
}

/// The outcome of judging one operation: allowed, refused, or not known from the data at hand
/// (a condition follows a reference to a record the caller does not hold).
public enum PermissionVerdict: Sendable, Hashable {
    case allowed
    case refused
    case unknown
}

/// The schema's permission rules, applied: the one evaluator the server enforces and every
/// device checks its writes with, so that the two never disagree.
///
/// It reads no data itself: the record judged is given as its values by attribute name (and
/// `id`), and `lookup` gives the values of a record a condition follows a reference to (`nil`
/// when the caller does not hold it: the server treats that as refused, a device as unknown).
///
/// For example, a coach updating a team:
///
/// ```swift
/// let rules = PermissionRules(schema: schema)
/// let verdict = try rules.judge(.update, on: teams, values: { team[$0] }, actor: Actor(role: "coach", user: 7)) { entity, id in
///     store.values(of: entity, id)
/// }
/// if verdict == .refused { throw forbidden(rules.requirement(.update, on: teams)) }
/// ```
public struct PermissionRules: Sendable {
    public let schema: Schema

    public typealias Values = (_ attribute: String) -> Value
    public typealias Lookup = (_ entity: String, _ id: RecordID) throws -> Values?

    public init(schema: Schema) {
        self.schema = schema
    }

    /// Whether `actor` may do `operation` on the record of `entity` whose values (by
    /// attribute name, `id` included) are `values`.
    public func judge(
        _ operation: PermissionOperation, on entity: Entity, values: Values, actor: Actor, lookup: Lookup
    ) rethrows -> PermissionVerdict {
        if actor.role == .viewer { return .refused }
        if actor.role == .admin { return .allowed }
        guard let entries = entity.permissions?.rules[operation] else { return .allowed }
        var verdict = PermissionVerdict.refused
        for entry in entries where entry.role == actor.role || entry.role == .anyone {
            switch try satisfied(entry.conditions, entity: entity, values: values, user: actor.user, lookup: lookup) {
            case .allowed: return .allowed
            case .unknown: verdict = .unknown
            case .refused: continue
            }
        }
        return verdict
    }

    /// Whether `actor` may set or change `attribute` (its `write` roles).
    public func mayWrite(_ attribute: Attribute, actor: Actor) -> Bool {
        if actor.role == .viewer { return false }
        guard actor.role != .admin, let roles = attribute.writeRoles else { return true }
        return roles.contains(actor.role)
    }

    /// What would allow `operation` on `entity`, in words: `admin, or coach where coach_id is you`.
    public func requirement(_ operation: PermissionOperation, on entity: Entity) -> String {
        guard let entries = entity.permissions?.rules[operation] else { return "any role but viewer" }
        var options: [String] = []
        if !entries.contains(where: { $0.role == .admin && $0.conditions.isEmpty }) { options.append("admin") }
        for entry in entries {
            let who = entry.role == .anyone ? "anyone but a viewer" : entry.role.rawValue
            options.append(
                entry.conditions.isEmpty ? who : who + " where " + entry.conditions.map { "\($0) is you" }.joined(separator: " and "))
        }
        return options.joined(separator: ", or ")
    }

    /// Who may set or change `attribute`, in words: `admin or medic`.
    public func writeRequirement(_ attribute: Attribute) -> String {
        let roles = [Role.admin] + (attribute.writeRoles ?? []).filter { $0 != .admin }
        return roles.map(\.rawValue).joined(separator: " or ")
    }

    private func satisfied(
        _ conditions: [UserCondition], entity: Entity, values: Values, user: RecordID?, lookup: Lookup
    ) rethrows
        -> PermissionVerdict
    {
        var verdict = PermissionVerdict.allowed
        conditions: for condition in conditions {
            guard let user else { return .refused }
            // Follow each reference of the path to the record it reaches, then read the last name.
            var current = entity
            var read = values
            for name in condition.path.dropLast() {
                guard case .integer(let raw) = read(name), let targetName = current.attribute(name)?.referenceTarget,
                    let target = schema.entity(targetName)
                else { return .refused }
                guard let referenced = try lookup(targetName, RecordID(raw)) else {
                    verdict = .unknown
                    continue conditions
                }
                current = target
                read = referenced
            }
            guard read(condition.path[condition.path.count - 1]) == .integer(user.rawValue) else { return .refused }
        }
        return verdict
    }
}

extension PermissionRules {
    /// What a delete's `nullify` rule does to a surviving record, judged as the update it is:
    /// the reference attributes it sets to null must be the actor's to write (their `write`
    /// rules), and the actor must be allowed to update the record as it is and as it would be
    /// (so that a nullification never moves a record out of the actor's reach either).
    ///
    /// `values` are the record's values now (by attribute name, `id` included); the result is
    /// the first refusal, in words, or the verdict.
    public func judgeNullification(
        of attributeIndices: [Int], on entity: Entity, values: Values, actor: Actor, lookup: Lookup
    ) rethrows -> (verdict: PermissionVerdict, refusal: String?) {
        for index in attributeIndices where !mayWrite(entity.attributes[index], actor: actor) {
            let attribute = entity.attributes[index]
            return (.refused, "\(attribute.name) may be set only by \(writeRequirement(attribute))")
        }
        let nulled = Set(attributeIndices.map { entity.attributes[$0].name })
        var verdict = PermissionVerdict.allowed
        for isAfter in [false, true] {
            let judged = try judge(
                .update, on: entity, values: { name in isAfter && nulled.contains(name) ? .null : values(name) }, actor: actor,
                lookup: lookup)
            switch judged {
            case .allowed: continue
            case .unknown: verdict = .unknown
            case .refused:
                let names = attributeIndices.map { entity.attributes[$0].name }.joined(separator: ", ")
                let when = isAfter ? ", which it would no longer meet with \(names) set to null" : ""
                return (.refused, "update needs \(requirement(.update, on: entity))\(when)")
            }
        }
        return (verdict, nil)
    }
}
