import Configuration
import Foundation
import Synchronization
import TillCore

/// The keys a settings file names that are no setting of `till serve`: a misspelled key (`confirmation.max-atempts`,
/// `{"htp": {"port": 9000}}`) would otherwise leave its setting at its default without a word, as swift-configuration
/// answers only the keys it is asked for.
///
/// What is a setting is what `ServerSettings(config:)` asks its reader for (``KeysAsked``, the reader's access
/// reporter), so there is no second list of the keys to keep: every key is read at every start, in use or not (the
/// tracing settings with tracing off, the simulator's in production).
enum SettingsFileKeys {
    /// Refuses `file` (JSON, already read once by swift-configuration's provider) when it names a key that is not in
    /// `known`: `unknownSetting`, with the nearest known key when one is close.
    static func refuseUnknown(in file: String, known: Set<String>) throws {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(filePath: file)))
        } catch {
            throw SettingsRefusal(.invalidConfigFile, "\(file) is not a JSON object of settings: \(error)")
        }
        guard let settings = object as? [String: Any] else {
            throw SettingsRefusal(.invalidConfigFile, "\(file) is not a JSON object of settings")
        }
        let unknown = keys(of: settings).filter { !known.contains($0) }.sorted()
        guard let first = unknown.first else { return }
        let nearest = known.map { (key: $0, distance: distance($0, first)) }.min { $0.distance < $1.distance }
        let hint = nearest.map { $0.distance <= max(2, first.count / 4) ? " (did you mean \($0.key)?)" : "" } ?? ""
        throw SettingsRefusal(
            .unknownSetting,
            "\(file) names \(unknown.count == 1 ? "a setting" : "settings") till serve does not have: "
                + unknown.joined(separator: ", ") + hint + "; docs/configuration.md lists them"
        )
    }

    /// The keys of a settings object as swift-configuration reads them: an object's members joined with dots
    /// (`{"http": {"port": 1}}` and `{"http.port": 1}` are both `http.port`; an empty object names none); anything
    /// else is a value.
    static func keys(of object: [String: Any], under prefix: String = "") -> [String] {
        object.flatMap { name, value -> [String] in
            let key = prefix + name
            if let inner = value as? [String: Any] { return keys(of: inner, under: key + ".") }
            return [key]
        }
    }

    /// Levenshtein's distance between two keys, in characters.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// The keys a `ConfigReader` was asked for, as dotted text (`http.port`).
final class KeysAsked: AccessReporter {
    private let asked = Mutex<Set<String>>([])

    var keys: Set<String> { asked.withLock { $0 } }

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        asked.withLock { _ = $0.insert(key) }
    }
}
