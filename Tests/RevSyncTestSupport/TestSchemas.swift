public import RevSyncProtocol

extension Schema {
    /// A schema where a delete's `nullify` reaches what its rules protect: an item's category is
    /// an admin's to set (`write`), and a shelf is updated by the owner of its category. What
    /// the server's and the device's tests of nullify permissions share.
    public static let nullifyCatalogue = try! Schema(
        json: Array(
            #"""
            {"version": 1, "users": "people",
             "entities": {
              "people": {"attributes": {"name": {"type": "text"}}},
              "categories": {"attributes": {"name": {"type": "text"}, "owner_id": {"type": "reference", "target": "people", "onDelete": "nullify"}},
                "permissions": {"delete": [{"role": "*", "where": {"owner_id": "$user"}}]}},
              "items": {"attributes": {"name": {"type": "text"},
                  "category_id": {"type": "reference", "target": "categories", "onDelete": "nullify", "write": ["admin"]}}},
              "shelves": {"attributes": {"category_id": {"type": "reference", "target": "categories", "onDelete": "nullify"}},
                "permissions": {"update": [{"role": "*", "where": {"category_id.owner_id": "$user"}}]}}
             }}
            """#.utf8))
}

extension Schema {
    /// The demo schema (whose players have a `photo`) with a second attachment: a screening's
    /// `consent` form (the demo's version + 1).
    public static let attachments: Schema = {
        var entities: [Entity] = []
        for entity in Schema.demo.entities {
            let extra: [Attribute] =
                switch entity.name {
                case "screen_instances": [Attribute(name: "consent", type: .attachment)]
                default: []
                }
            entities.append(
                try! Entity(
                    name: entity.name, attributes: entity.attributes + extra, summary: entity.summary, permissions: entity.permissions,
                    swiftName: entity.swiftName, staleness: entity.staleness))
        }
        return try! Schema(version: Schema.demo.version + 1, entities: entities, users: Schema.demo.users, roles: Schema.demo.roles)
    }()
}
