import Foundation
import RevSyncProtocol

/// The values of seeded records: plausible for the demo schema's attribute names (names,
/// birthdays, jersey numbers, measurements), typed and sized sensibly for any other schema.
struct SeedValues {
    let entity: Entity
    /// The IDs seeded so far, per entity: what references point at.
    let targets: [String: ClosedRange<Int64>]
    /// The IDs this entity is being seeded with (for references to itself).
    let ids: ClosedRange<Int64>
    private var texts: [String: String] = [:]

    init(entity: Entity, targets: [String: ClosedRange<Int64>], ids: ClosedRange<Int64>) {
        self.entity = entity
        self.targets = targets
        self.ids = ids
    }

    /// How many records of an entity a data set of this shape holds, relative to the others.
    static func weight(of entity: String) -> Double {
        switch entity {
        case "users": 0.6
        case "seasons": 0.02
        case "teams": 0.3
        case "players": 6
        case "team_players": 8
        case "venues": 0.08
        case "training_sessions": 4
        case "attendances": 35
        case "screens": 0.03
        case "screen_items": 0.25
        case "screen_instances": 8
        case "screen_instance_items": 30
        case "notes": 7
        default: 5
        }
    }

    /// The values of record `id`, in the order of the entity's attributes.
    mutating func record(id: Int64, using random: inout SeededRandom) -> [Value] {
        texts.removeAll(keepingCapacity: true)
        return entity.attributes.map { attribute in
            let value = value(for: attribute, id: id, using: &random)
            if case .text(let text) = value { texts[attribute.name] = text }
            return value
        }
    }

    private func value(for attribute: Attribute, id: Int64, using random: inout SeededRandom) -> Value {
        if !attribute.isRequired && random.chance(Self.nullShare(attribute.name)) { return .null }
        switch attribute.type {
        case .reference(let target, _):
            // A reference to its own entity points at an earlier record; the first has none.
            let range = target == entity.name ? (id > ids.lowerBound ? ids.lowerBound...(id - 1) : nil) : targets[target]
            guard let range else { return .null }
            return .integer(range.lowerBound + Int64(random.next() % UInt64(range.count)))
        case .text: return .text(text(attribute.name, id: id, using: &random))
        case .date: return .text(date(attribute.name, using: &random))
        case .integer: return .integer(Int64(integer(attribute.name, using: &random)))
        case .real: return .real(real(attribute.name, using: &random))
        case .boolean: return .bool(random.chance(Self.trueShare(attribute.name)))
        case .attachment: return .null  // no bytes to name: seeded records have none
        }
    }

    private static func nullShare(_ attribute: String) -> Double {
        switch attribute {
        case "comment", "text_value", "description": 0.6
        case "email", "address": 0.2
        default: 0.08
        }
    }

    private static func trueShare(_ attribute: String) -> Double {
        switch attribute {
        case "active": 0.9
        case "present": 0.85
        case "cancelled": 0.04
        default: 0.5
        }
    }

    // MARK: Text

    private func text(_ attribute: String, id: Int64, using random: inout SeededRandom) -> String {
        switch attribute {
        case "first_name": return random.pick(Self.firstNames)!
        case "last_name": return random.pick(Self.lastNames)!
        case "email":
            let first = texts["first_name"]?.lowercased() ?? "staff"
            let last = texts["last_name"]?.lowercased().filter(\.isLetter) ?? "member"
            return "\(first).\(last)\(id)@club.example"
        case "role": return random.pick(["coach", "assistant coach", "physio", "scout", "team manager", "analyst"])!
        case "age_group": return "U\(random.number(in: 8...19))"
        case "position": return random.pick(["goalkeeper", "defender", "midfielder", "forward"])!
        case "address": return "\(random.number(in: 1...240)) \(random.pick(Self.streets)!)"
        case "label": return random.pick(Self.measurements)!.label
        case "unit": return random.pick(Self.measurements)!.unit
        case "name": return name(id: id, using: &random)
        case "comment", "body", "description", "text_value": return random.pick(Self.remarks)!
        default: return "\(entity.name) \(id) \(attribute)"
        }
    }

    private func name(id: Int64, using random: inout SeededRandom) -> String {
        switch entity.name {
        case "seasons":
            let year = 2000 + Int(id % 30)
            return "Season \(year)/\(String(year + 1).suffix(2))"
        case "teams": return "U\(random.number(in: 8...19)) \(random.pick(Self.teamNames)!)"
        case "venues": return "\(random.pick(Self.places)!) \(random.pick(["Field", "Park", "Arena", "Sports Hall"])!)"
        case "screens": return random.pick(Self.screenNames)!
        default: return "\(entity.name.replacingOccurrences(of: "_", with: " ").capitalized) \(id)"
        }
    }

    // MARK: Dates and numbers

    private func date(_ attribute: String, using random: inout SeededRandom) -> String {
        let years: ClosedRange<Int> =
            switch (entity.name, attribute) {
            case ("players", "date_of_birth"): 2007...2018
            case (_, "date_of_birth"): 1962...2001
            default: 2019...2026
            }
        let day = "\(random.number(in: years))-\(twoDigits(random.number(in: 1...12)))-\(twoDigits(random.number(in: 1...28)))"
        guard attribute.hasSuffix("_at") else { return day }
        return "\(day) \(twoDigits(random.number(in: 7...20))):\(twoDigits(random.pick([0, 15, 30, 45])!)):00+00"
    }

    private func integer(_ attribute: String, using random: inout SeededRandom) -> Int {
        switch attribute {
        case "jersey_number": random.number(in: 1...99)
        case "capacity": random.number(in: 5...250) * 20
        case "duration_minutes": random.pick([45, 60, 75, 90, 120])!
        case "position": random.number(in: 1...12)
        default: random.number(in: 0...1_000)
        }
    }

    private func real(_ attribute: String, using random: inout SeededRandom) -> Double {
        let value =
            switch attribute {
            case "height_cm": 120 + random.nextDouble() * 75
            case "numeric_value": random.nextDouble() * 100
            default: random.nextDouble() * 1_000
            }
        return (value * 10).rounded() / 10
    }

    private func twoDigits(_ number: Int) -> String {
        number < 10 ? "0\(number)" : String(number)
    }

    // MARK: Vocabulary

    private static let firstNames = [
        "Emma", "Liam", "Olivia", "Noah", "Ava", "Elijah", "Sophia", "Lucas", "Mia", "Mateo", "Amelia", "Leo", "Chloé",
        "Yusuf", "Aoife", "Sebastián", "Zoë", "Kenji", "Freya", "Tomás", "Ingrid", "Malik", "Priya", "Jonas", "Léa",
        "Oskar", "Nadia", "Finn", "Hana", "Matteo", "Saoirse", "Arjun", "Elif", "Rafael", "Maja", "Kofi",
    ]
    private static let lastNames = [
        "Smith", "García", "Müller", "Rossi", "Dubois", "Nowak", "O'Brien", "Jensen", "Kowalski", "Novák", "Silva",
        "Yamamoto", "Kim", "Hansen", "Ahmed", "Fernández", "Murphy", "Papadopoulos", "Virtanen", "Van der Berg", "Okafor",
        "Lindqvist", "Costa", "Schmidt", "Nguyen", "Popescu", "Horvat", "Andersson", "Brennan", "Mendes",
    ]
    private static let teamNames = [
        "Eagles", "Lions", "Falcons", "Wolves", "Dolphins", "Hornets", "Rangers", "Rovers", "Comets", "United", "Athletic",
    ]
    private static let places = ["Riverside", "Northgate", "Oakwood", "Harbour", "Hillcrest", "Meadow", "Westend", "Lakeside"]
    private static let streets = ["Mill Lane", "Station Road", "Church Street", "Park Avenue", "Harbour Way", "Elm Grove"]
    private static let screenNames = [
        "Speed and agility", "Endurance", "Flexibility", "Strength", "Growth and maturation", "Ball skills", "Reaction",
    ]
    private static let measurements: [(label: String, unit: String)] = [
        ("Sprint 10 m", "s"), ("Sprint 30 m", "s"), ("Vertical jump", "cm"), ("Sit and reach", "cm"), ("Beep test", "level"),
        ("Height", "cm"), ("Weight", "kg"), ("Grip strength", "kg"), ("Yo-yo intermittent", "m"), ("Juggling", "count"),
    ]
    private static let remarks = [
        "", "Good session, full effort.", "Sore hamstring, took it easy.", "Left early for a school event.",
        "Personal best!", "Retest in four weeks.", "Needs work on the weaker foot.", "Returning from injury; monitored load.",
        "Parents informed.", "Measured on the artificial pitch, wet conditions.", "Great attitude, helped the younger players.",
        "Felt dizzy after the sprints; rested 10 minutes.",
    ]
}
