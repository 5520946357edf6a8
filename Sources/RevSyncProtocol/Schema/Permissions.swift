/// An operation a permission rule governs.
public enum PermissionOperation: String, Sendable, Hashable, CaseIterable {
    case create, update, delete
}

/// Who may create, update or delete the records of one entity (the entity's `permissions` in
/// the schema file). An operation without a list is allowed to every role but `viewer`.
public struct EntityPermissions: Sendable, Hashable {
    public var rules: [PermissionOperation: [PermissionEntry]]

    public init(rules: [PermissionOperation: [PermissionEntry]]) {
        self.rules = rules
    }
}

/// One entry of a permission list: a role, alone (`"coach"`), or with conditions on the record
/// (`{"role": "coach", "where": {"coach_id": "$user"}}`): the device has the role (or the role
/// is `"*"`, any role but `viewer`) and the record's value at each path is the device's user.
public struct PermissionEntry: Sendable, Hashable {
    public var role: Role
    public var conditions: [UserCondition]

    public init(role: Role, conditions: [UserCondition] = []) {
        self.role = role
        self.conditions = conditions
    }
}

/// "The record's value at `path` is the device's user": `path` is an attribute of the entity
/// (or `id`, the record itself), or a reference attribute and an attribute of the record it
/// points at (`team_id.coach_id`).
public struct UserCondition: Sendable, Hashable, CustomStringConvertible {
    public var path: [String]

    public init(path: [String]) {
        self.path = path
    }

    public var description: String { path.joined(separator: ".") }
}
