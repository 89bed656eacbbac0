/// A JSON value for the small bodies `till shop` sends to the simulator's admin API.
enum JSONValue: Encodable, Sendable {
    case bool(Bool)
    case int(Int)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        }
    }
}
