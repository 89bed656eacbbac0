/// A value of an OpenStep (NeXTSTEP) ASCII property list, the subset Apple uses in iOS 6-style
/// transaction receipts:
///
/// ```
/// value      = dictionary | array | string
/// dictionary = "{" *(string "=" value ";") "}"
/// array      = "(" [value *("," value) [","]] ")"
/// string     = quoted | bare
/// quoted     = DQUOTE *(char | "\" escape) DQUOTE    ; escape: \" \\ \n \t \r \a \b \f \v \UXXXX \ooo
/// bare       = 1*(ALPHA | DIGIT | "_" | "$" | "+" | "/" | ":" | "." | "-")
/// ```
///
/// Whitespace (space, tab, CR, LF) may separate tokens. Comments, `<hex data>` and the
/// brace-less "strings file" form are not part of the subset and are rejected.
/// Dictionaries keep their entries in document order and reject duplicate keys, so two readers
/// can never disagree about which of two values a key has.
public indirect enum OpenStepPlist: Sendable, Hashable {
    case string(String)
    case array([OpenStepPlist])
    /// Entries in document order; keys are unique.
    case dictionary([Entry])

    /// One `key = value;` entry of a dictionary.
    public struct Entry: Sendable, Hashable {
        public var key: String
        public var value: OpenStepPlist

        public init(key: String, value: OpenStepPlist) {
            self.key = key
            self.value = value
        }
    }

    /// Bounds that keep hostile input cheap to reject.
    public struct Limits: Sendable, Hashable {
        /// The largest accepted document, in bytes.
        public var maxBytes: Int
        /// The deepest accepted nesting of dictionaries and arrays (a flat dictionary has depth 1).
        public var maxDepth: Int

        public init(maxBytes: Int = 64 * 1024, maxDepth: Int = 16) {
            self.maxBytes = maxBytes
            self.maxDepth = maxDepth
        }

        /// 64 KiB, depth 16.
        public static let `default` = Limits()
    }

    /// A dictionary from `(key, value)` pairs in order. Duplicate keys are a programming error
    /// and keep the first value.
    public static func dictionary(_ pairs: KeyValuePairs<String, OpenStepPlist>) -> OpenStepPlist {
        var seen = Set<String>()
        var entries: [Entry] = []
        for (key, value) in pairs where seen.insert(key).inserted {
            entries.append(Entry(key: key, value: value))
        }
        return .dictionary(entries)
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [OpenStepPlist]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries in document order, when this is a dictionary.
    public var dictionaryEntries: [Entry]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// The value for `key`, when this is a dictionary holding it.
    public subscript(key: String) -> OpenStepPlist? {
        dictionaryEntries?.first(where: { $0.key == key })?.value
    }
}
