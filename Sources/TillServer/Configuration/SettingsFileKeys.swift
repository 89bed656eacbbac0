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
    /// Every key of `till serve`'s settings: those its settings ask for when every one is at its default, which
    /// no refusal stops before the last.
    static func settings() throws -> Set<String> {
        let asked = KeysAsked()
        _ = try ServerSettings(
            config: ConfigReader(providers: [InMemoryProvider(name: "defaults", values: [:])], accessReporter: asked)
        )
        return asked.keys
    }

    /// Refuses the settings file `file` holds when it names a key that is not in `known`: `unknownSetting`, with the
    /// nearest known key when one is close.
    static func refuseUnknown(in file: SettingsFile, known: Set<String>) throws {
        guard let settings = try? JSONSerialization.jsonObject(with: file.bytes) as? [String: Any] else {
            throw SettingsRefusal(.invalidConfigFile, "\(file.path) is not a JSON object of settings")
        }
        let unknown = keys(of: settings).filter { !known.contains($0) }.sorted()
        guard let first = unknown.first else { return }
        let nearest = known.map { (key: $0, distance: distance($0, first)) }.min { $0.distance < $1.distance }
        let hint = nearest.map { $0.distance <= max(2, first.count / 4) ? " (did you mean \($0.key)?)" : "" } ?? ""
        throw SettingsRefusal(
            .unknownSetting,
            "\(file.path) names \(unknown.count == 1 ? "a setting" : "settings") till serve does not have: "
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

    /// Levenshtein's distance between two keys, in characters. Hand-written: none of the mirrored packages has an
    /// edit distance, and this one serves one message.
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

/// `till serve`'s settings file, its bytes read once: parsed as swift-configuration's `FileProvider<JSONSnapshot>`
/// parses them, and the same bytes checked for keys that are no setting (`SettingsFileKeys`). Hand-written because
/// `FileProvider` reads the file itself and keeps no bytes, and a second read of the path can answer something else:
/// nothing at all for `--config <(envsubst < till.json)`, whose pipe is read once.
struct SettingsFile: ConfigProvider {
    let path: String
    let bytes: Data
    private let parsed: JSONSnapshot

    init(path: String) throws {
        self.path = path
        // A file handle, not `Data(contentsOf:)`, which refuses what is not a regular file (a pipe: EACCES).
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SettingsRefusal(.invalidConfigFile, "cannot read \(path)")
        }
        defer { try? handle.close() }
        bytes = try handle.readToEnd() ?? Data()
        parsed = try JSONSnapshot(
            data: bytes.bytes,
            providerName: "FileProvider<JSONSnapshot>",
            parsingOptions: .default
        )
    }

    var providerName: String { parsed.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try parsed.value(forKey: key, type: type)
    }

    // `nonisolated(nonsending)` here and below: swift-configuration is built with NonisolatedNonsendingByDefault, so
    // its protocol's async requirements and their handlers are.
    nonisolated(nonsending) func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws
        -> LookupResult
    {
        try value(forKey: key, type: type)
    }

    nonisolated(nonsending) func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
            ) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { parsed }

    nonisolated(nonsending) func watchSnapshot<Return: ~Copyable>(
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>
            ) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}
