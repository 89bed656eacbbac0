import SQLKit
import Synchronization

/// Column names for Codable records: a property's camelCase name in snake_case (`appAppleId` → `app_apple_id`),
/// as sql-kit's `convertToSnakeCase` names them, but converted once per name and then looked up.
///
/// sql-kit converts every key of every row it encodes or decodes, and the conversion walks the string by
/// grapheme: 6.5% of a submission's CPU time. A record has a few dozen distinct keys in all.
public enum ColumnNames {
    /// Encodes records into columns for inserts and updates; `nil` properties are written as NULL.
    public static let encoder = SQLQueryEncoder(keyEncodingStrategy: .custom(key), nilEncodingStrategy: .asNil)
    /// Decodes rows into records.
    public static let decoder = SQLRowDecoder(keyDecodingStrategy: .custom(key))

    private static let known = Mutex<[String: Column]>([:])

    private struct Column: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static func key(_ path: [any CodingKey]) -> any CodingKey {
        let name = path.last?.stringValue ?? ""
        if let column = known.withLock({ $0[name] }) { return column }
        let column = Column(stringValue: snakeCase(name))
        known.withLock { $0[name] = column }
        return column
    }

    /// sql-kit's rule: words start at each uppercase letter; a run of uppercase letters followed by lowercase
    /// ones is an acronym, whose last letter starts the next word (`myURLValue` → `my_uRL_value`); each word's
    /// first letter is lowercased and the words are joined with underscores.
    static func snakeCase(_ name: String) -> String {
        let characters = Array(name)
        guard characters.count > 1 else { return name }
        var words: [Range<Int>] = []
        var wordStart = 0
        var search = 1
        while let upper = characters[search...].firstIndex(where: \.isUppercase) {
            words.append(wordStart..<upper)
            wordStart = upper
            guard let lower = characters[upper...].firstIndex(where: \.isLowercase) else { break }
            search = lower
            if lower != upper + 1 {
                words.append(upper..<(lower - 1))
                wordStart = lower - 1
            }
        }
        words.append(wordStart..<characters.count)
        return words.map { range -> String in
            guard let first = characters[range].first else { return "" }
            return first.lowercased() + String(characters[range].dropFirst())
        }.joined(separator: "_")
    }
}
