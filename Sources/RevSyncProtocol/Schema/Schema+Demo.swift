extension Schema {
    /// The demo schema: the youth sports organisation of the case study, thirteen entities,
    /// with every attribute type (players have a `photo` attachment), every delete rule, and
    /// `swiftName` (`screen_instances` are `Screening` in Swift).
    ///
    /// Delete rules worth knowing when trying it out: deleting a team cascades to its
    /// team_players, training_sessions (and their attendances) and notes; a season with teams,
    /// a venue with training sessions and a screen that has been used (screen_instances) cannot
    /// be deleted (`deny`); deleting a user nullifies the references to them.
    public static let demo: Schema = {
        do {
            return try Schema(json: Array(demoJSON.utf8))
        } catch {
            fatalError("the built-in demo schema is invalid: \(error)")
        }
    }()

    /// The demo schema in the schema file format.
    public static let demoJSON = #"""
        {
          "version": 2,
          "description": "A youth sports organisation: staff, seasons, teams, players, training and player screenings.",
          "entities": {
            "users": {
              "description": "Staff members.",
              "attributes": {
                "first_name": { "type": "text", "required": true },
                "last_name": { "type": "text", "required": true },
                "date_of_birth": { "type": "date" },
                "email": { "type": "text" },
                "role": { "type": "text", "description": "coach, physio, scout, ..." }
              }
            },
            "seasons": {
              "attributes": {
                "name": { "type": "text", "required": true },
                "starts_on": { "type": "date" },
                "ends_on": { "type": "date" }
              }
            },
            "teams": {
              "attributes": {
                "name": { "type": "text", "required": true },
                "age_group": { "type": "text" },
                "season_id": { "type": "reference", "target": "seasons", "onDelete": "deny" },
                "coach_id": { "type": "reference", "target": "users", "onDelete": "nullify" }
              }
            },
            "players": {
              "attributes": {
                "first_name": { "type": "text", "required": true },
                "last_name": { "type": "text", "required": true },
                "date_of_birth": { "type": "date" },
                "position": { "type": "text" },
                "height_cm": { "type": "real" },
                "active": { "type": "boolean" },
                "photo": { "type": "attachment", "description": "A portrait for the team sheet." }
              }
            },
            "team_players": {
              "description": "Which players play in which team.",
              "attributes": {
                "team_id": { "type": "reference", "target": "teams", "onDelete": "cascade", "required": true },
                "player_id": { "type": "reference", "target": "players", "onDelete": "cascade", "required": true },
                "jersey_number": { "type": "integer" },
                "joined_on": { "type": "date" }
              }
            },
            "venues": {
              "attributes": {
                "name": { "type": "text", "required": true },
                "address": { "type": "text" },
                "capacity": { "type": "integer" }
              }
            },
            "training_sessions": {
              "attributes": {
                "team_id": { "type": "reference", "target": "teams", "onDelete": "cascade", "required": true },
                "venue_id": { "type": "reference", "target": "venues", "onDelete": "deny" },
                "starts_at": { "type": "date", "required": true },
                "duration_minutes": { "type": "integer" },
                "cancelled": { "type": "boolean" }
              }
            },
            "attendances": {
              "attributes": {
                "training_session_id": { "type": "reference", "target": "training_sessions", "onDelete": "cascade", "required": true },
                "player_id": { "type": "reference", "target": "players", "onDelete": "cascade", "required": true },
                "present": { "type": "boolean", "required": true },
                "comment": { "type": "text" }
              }
            },
            "screens": {
              "description": "A kind of player screening (a test protocol).",
              "attributes": {
                "name": { "type": "text", "required": true },
                "description": { "type": "text" },
                "active": { "type": "boolean" }
              }
            },
            "screen_items": {
              "description": "One measurement of a screen.",
              "attributes": {
                "screen_id": { "type": "reference", "target": "screens", "onDelete": "cascade", "required": true },
                "label": { "type": "text", "required": true },
                "unit": { "type": "text" },
                "position": { "type": "integer" }
              }
            },
            "screen_instances": {
              "description": "One screening of a player; a screen that has been used cannot be deleted.",
              "swiftName": "Screening",
              "attributes": {
                "screen_id": { "type": "reference", "target": "screens", "onDelete": "deny", "required": true },
                "player_id": { "type": "reference", "target": "players", "onDelete": "cascade" },
                "recorded_by_id": { "type": "reference", "target": "users", "onDelete": "nullify" },
                "date": { "type": "date" },
                "comment": { "type": "text" }
              }
            },
            "screen_instance_items": {
              "description": "One measured value of a screening.",
              "swiftName": "ScreeningValue",
              "attributes": {
                "screen_instance_id": { "type": "reference", "target": "screen_instances", "onDelete": "cascade", "required": true },
                "screen_item_id": { "type": "reference", "target": "screen_items", "onDelete": "nullify" },
                "numeric_value": { "type": "real" },
                "text_value": { "type": "text" }
              }
            },
            "notes": {
              "attributes": {
                "body": { "type": "text", "required": true },
                "author_id": { "type": "reference", "target": "users", "onDelete": "nullify" },
                "player_id": { "type": "reference", "target": "players", "onDelete": "cascade" },
                "team_id": { "type": "reference", "target": "teams", "onDelete": "cascade" },
                "created_at": { "type": "date" }
              }
            }
          }
        }
        """#
}
