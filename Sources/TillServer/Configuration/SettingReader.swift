import Configuration
import TillCore

/// Reads `till serve`'s settings (numbers, switches and text; not its secrets) so that a bad value stops the server at
/// start (exit 64) instead of being replaced: swift-configuration's `int(forKey:default:)` and its kin answer the
/// default for a value that is there but is not of the type (`TILL_HTTP_PORT=abc` listened on 8080,
/// `TILL_CONFIRMATION_PACING=maybe` paced, a JSON number for a text setting was dropped), and the clamps that used to
/// follow them moved a value outside its range without a word. Values are taken as given: `TILL_HTTP_PORT="80 "` is
/// not a number.
///
/// A key no provider has takes its default. A value some provider has must be of the setting's type and within its
/// range, or it is refused with the key, what it takes and what it was given.
struct SettingReader {
    let config: ConfigReader

    /// A whole number within `range`; with none, any: the caller checks what it needs.
    func int(
        _ key: String,
        default standard: Int,
        in range: ClosedRange<Int>? = nil,
        else reason: SettingsReason = .invalidSetting
    ) throws -> Int {
        let what = "a whole number" + (range.map { " " + Self.describe($0) } ?? "")
        guard let value = config.int(forKey: ConfigKey(key)) else {
            try refuseIfGiven(key, what, reason) { Int($0) != nil }
            return standard
        }
        guard range?.contains(value) ?? true else { throw SettingsRefusal(reason, "\(key) is \(what), not \(value)") }
        return value
    }

    /// A number (fractions allowed) within `range`; with none, any number: the caller checks what it needs.
    func double(
        _ key: String,
        default standard: Double,
        in range: ClosedRange<Double>? = nil,
        else reason: SettingsReason = .invalidSetting
    ) throws -> Double {
        let what = "a number" + (range.map { " from \(Self.text($0.lowerBound)) to \(Self.text($0.upperBound))" } ?? "")
        // A JSON file's whole number (`"wait-seconds": 5`) is a number too.
        guard let value = config.double(forKey: ConfigKey(key)) ?? config.int(forKey: ConfigKey(key)).map(Double.init)
        else {
            try refuseIfGiven(key, what, reason) { Double($0) != nil }
            return standard
        }
        guard value.isFinite, range?.contains(value) ?? true else {
            throw SettingsRefusal(reason, "\(key) is \(what), not \(Self.text(value))")
        }
        return value
    }

    /// `true` or `false`.
    /// swift-configuration also reads `yes`/`no` and `1`/`0`, in any case, from the environment, and a JSON file's
    /// `1`/`0` (it cannot tell them from `true`/`false`: JSONSerialization gives both as numbers on Linux);
    /// docs/configuration.md says so. Another JSON number, which it takes for on (`2`), is refused.
    func bool(_ key: String, default standard: Bool) throws -> Bool {
        let configKey = ConfigKey(key)
        guard let value = config.bool(forKey: configKey) else {
            try refuseIfGiven(key, "true or false", .invalidSetting) { ["true", "false"].contains($0) }
            return standard
        }
        // Text (the environment's `1`) reads as a string too; a JSON number does not.
        if config.string(forKey: configKey) == nil,
            let number = config.double(forKey: configKey) ?? config.int(forKey: configKey).map(Double.init),
            number != 0, number != 1
        {
            throw SettingsRefusal(.invalidSetting, "\(key) is true or false, not \(Self.text(number))")
        }
        return value
    }

    /// Text: a value of another type (a JSON file's number or list) is refused, not taken for the default.
    func text(_ key: String, default standard: String, else reason: SettingsReason = .invalidSetting) throws -> String {
        try text(key, else: reason) ?? standard
    }

    /// Text, or nil when no provider has the key.
    func text(_ key: String, else reason: SettingsReason = .invalidSetting) throws -> String? {
        guard let value = config.string(forKey: ConfigKey(key)) else {
            try refuseIfGiven(key, "text", reason) { _ in false }
            return nil
        }
        return value
    }

    /// The key has a value that is not of its type: refused, with the value as given (none of these is a secret).
    /// An empty one (`TILL_HTTP_PORT=`, as systemd's `Environment=` or compose's unset `${X}` give) counts as none.
    /// Text that would read as the type came from a JSON file in quotes, and the message says so.
    private func refuseIfGiven(
        _ key: String,
        _ what: String,
        _ reason: SettingsReason,
        parses: (String) -> Bool
    ) throws {
        let configKey = ConfigKey(key)
        let given: String
        if let text = config.string(forKey: configKey) {
            guard !text.isEmpty else { return }
            given = parses(text) ? "the text \"\(text)\" (in a JSON file, write it without quotes)" : text
        } else if let number = config.double(forKey: configKey) {
            given = Self.text(number)
        } else if let number = config.int(forKey: configKey) {
            given = String(number)
        } else if let flag = config.bool(forKey: configKey) {
            given = String(flag)
        } else if config.stringArray(forKey: configKey) != nil || config.doubleArray(forKey: configKey) != nil
            || config.intArray(forKey: configKey) != nil || config.boolArray(forKey: configKey) != nil
        {
            given = "a list"
        } else {
            return
        }
        throw SettingsRefusal(reason, "\(key) is \(what), not \(given)")
    }

    private static func describe(_ range: ClosedRange<Int>) -> String {
        range.upperBound == Int.max ? "from \(range.lowerBound) up" : "from \(range.lowerBound) to \(range.upperBound)"
    }

    /// 0.05 as 0.05, 300 as 300.
    private static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
