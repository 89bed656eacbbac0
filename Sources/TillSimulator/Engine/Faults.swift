import Foundation
import HTTPTypes
import Synchronization
import TillCore
import TillHTTPKit

/// The Apple endpoints a fault can hit.
public enum FaultEndpoint: String, Codable, Sendable, CaseIterable {
    case verifyReceipt
    case serverAPI
    case storeKit
}

/// One injected fault: Apple being slow, down, or answering with a temporary error.
///
/// Rules apply to an environment (or both) and an endpoint; the first active matching rule applies to a
/// request. A rule can be limited in time (`untilMilliseconds`, real time) or in count (`remaining`).
public struct FaultRule: Codable, Sendable, Hashable {
    /// How an outage shows itself.
    public enum Outage: String, Codable, Sendable {
        /// HTTP 503 with no body.
        case http503
        /// The connection is reset without an answer.
        case reset
        /// No answer until the client gives up (or `hangSeconds` pass).
        case hang
    }

    public var id: String
    /// `Production` or `Sandbox`; nil for both.
    public var environment: String?
    public var endpoint: FaultEndpoint
    /// Added latency, uniform between the two bounds (seconds).
    public var latencyMinimum: Double?
    public var latencyMaximum: Double?
    public var outage: Outage?
    public var hangSeconds: Double?
    /// verifyReceipt: the status to answer with (21005, 21009, 21100–21199, …).
    public var status: Int?
    /// verifyReceipt: the `is-retryable` flag sent with a 211xx status.
    public var isRetryable: Bool?
    /// App Store Server API: answer 429 rateLimitExceeded.
    public var rateLimited: Bool?
    /// Chance that the rule applies to a request (1 when nil).
    public var probability: Double?
    /// The rule ends at this real time (milliseconds since 1970).
    public var untilMilliseconds: Int64?
    /// The rule applies this many more times.
    public var remaining: Int?

    /// The longest latency or hang a rule may add, in seconds (a day). Larger ones were no test's need, and a
    /// value past what `Duration` holds (1e300, `inf` on the command line) trapped in `Task.sleep`.
    public static let longestDelay: Double = 86_400
    /// The longest a rule may last (`for=`), in seconds: ten years, as the clock advances at most.
    public static let longestWindow: Double = 10 * 365 * 86_400

    public init(
        id: String = UUID().uuidString.lowercased(),
        environment: String? = nil,
        endpoint: FaultEndpoint,
        latencyMinimum: Double? = nil,
        latencyMaximum: Double? = nil,
        outage: Outage? = nil,
        hangSeconds: Double? = nil,
        status: Int? = nil,
        isRetryable: Bool? = nil,
        rateLimited: Bool? = nil,
        probability: Double? = nil,
        untilMilliseconds: Int64? = nil,
        remaining: Int? = nil
    ) {
        self.id = id
        self.environment = environment
        self.endpoint = endpoint
        self.latencyMinimum = latencyMinimum
        self.latencyMaximum = latencyMaximum
        self.outage = outage
        self.hangSeconds = hangSeconds
        self.status = status
        self.isRetryable = isRetryable
        self.rateLimited = rateLimited
        self.probability = probability
        self.untilMilliseconds = untilMilliseconds
        self.remaining = remaining
    }

    /// Parses the command-line form `ENVIRONMENT:ENDPOINT:EFFECT[,EFFECT…]`, where ENVIRONMENT is
    /// `production`, `sandbox` or `*`, ENDPOINT is `verifyReceipt`, `serverAPI` or `storeKit`, and an EFFECT is
    /// `latency=3-6`, `outage=503|reset|hang`, `hang=SECONDS`, `status=21005`, `status=21100+retryable`, `rate-limit`,
    /// `probability=0.5`, `for=60` (seconds from now) or `times=3`.
    public init(parsing text: String, now: Date = Date()) throws {
        let parts = text.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count == 3 else {
            throw FaultRefusal(.invalidFault, "a fault is ENVIRONMENT:ENDPOINT:EFFECT, got \(text)")
        }
        var environment: String?
        switch parts[0].lowercased() {
        case "*", "any": environment = nil
        case let name:
            guard let parsed = AppStoreEnvironment(parsing: name), parsed == .production || parsed == .sandbox else {
                throw FaultRefusal(.invalidFault, "unknown environment \(parts[0]) in \(text)")
            }
            environment = parsed.rawValue
        }
        guard let endpoint = FaultEndpoint.allCases.first(where: { $0.rawValue.lowercased() == parts[1].lowercased() })
        else {
            throw FaultRefusal(.invalidFault, "unknown endpoint \(parts[1]) in \(text)")
        }
        self.init(environment: environment, endpoint: endpoint)
        for effect in parts[2].split(separator: ",").map(String.init) {
            let pair = effect.split(separator: "=", maxSplits: 1).map(String.init)
            let value = pair.count == 2 ? pair[1] : ""
            switch pair[0] {
            case "latency":
                let bounds = value.split(separator: "-").compactMap { Double($0) }
                guard bounds.count == 1 || bounds.count == 2,
                    bounds.allSatisfy({ (0...Self.longestDelay).contains($0) }), bounds[0] <= bounds.last!
                else {
                    throw FaultRefusal(
                        .invalidFault,
                        "latency is SECONDS or MIN-MAX (the smaller first), at most \(Int(Self.longestDelay)) seconds, got \(value)"
                    )
                }
                latencyMinimum = bounds[0]
                latencyMaximum = bounds.last
            case "outage":
                switch value {
                case "503", "http503": outage = .http503
                case "reset": outage = .reset
                case "hang": outage = .hang
                default: throw FaultRefusal(.invalidFault, "outage is 503, reset or hang, got \(value)")
                }
            case "status":
                let retryable = value.hasSuffix("+retryable")
                guard let code = Int(value.replacingOccurrences(of: "+retryable", with: "")) else {
                    throw FaultRefusal(.invalidFault, "status is a number, got \(value)")
                }
                status = code
                if (21100...21199).contains(code) { isRetryable = retryable }
            case "hang":
                guard let seconds = Double(value), seconds > 0, seconds <= Self.longestDelay else {
                    throw FaultRefusal(
                        .invalidFault,
                        "hang is a number of seconds, at most \(Int(Self.longestDelay)), got \(value)"
                    )
                }
                outage = .hang
                hangSeconds = seconds
            case "rate-limit": rateLimited = true
            case "probability":
                guard let p = Double(value), (0...1).contains(p) else {
                    throw FaultRefusal(.invalidFault, "probability is between 0 and 1, got \(value)")
                }
                probability = p
            case "for":
                guard let seconds = Double(value), seconds > 0, seconds <= Self.longestWindow else {
                    throw FaultRefusal(
                        .invalidFault,
                        "for is a number of seconds, at most \(Int(Self.longestWindow)), got \(value)"
                    )
                }
                untilMilliseconds = Int64((now.timeIntervalSince1970 + seconds) * 1000)
            case "times":
                guard let count = Int(value), count > 0 else {
                    throw FaultRefusal(.invalidFault, "times is a positive number, got \(value)")
                }
                remaining = count
            default:
                throw FaultRefusal(.invalidFault, "unknown effect \(effect) in \(text)")
            }
        }
    }

    /// Decodes the admin API's JSON form. `id` is optional: a rule given without one gets a generated id, which
    /// the answer (and `GET /admin/v1/faults`) shows and `DELETE /admin/v1/faults/{id}` takes. `environment` is
    /// `Production`, `Sandbox` (in any case) or absent (or `*`) for both; values are checked as the command-line
    /// syntax checks them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func invalid(_ key: CodingKeys, _ message: String) -> DecodingError {
            DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: message)
        }
        let id = try container.decodeIfPresent(String.self, forKey: .id) ?? UUID().uuidString.lowercased()
        guard !id.isEmpty, !id.contains("/") else { throw invalid(.id, "an id is a non-empty name without /") }
        var environment: String?
        if let name = try container.decodeIfPresent(String.self, forKey: .environment), name != "*" {
            guard let parsed = AppStoreEnvironment(parsing: name), parsed == .production || parsed == .sandbox else {
                throw invalid(.environment, "environment is Production, Sandbox or absent for both, got \(name)")
            }
            environment = parsed.rawValue
        }
        let probability = try container.decodeIfPresent(Double.self, forKey: .probability)
        if let probability, !(0...1).contains(probability) {
            throw invalid(.probability, "probability is between 0 and 1, got \(probability)")
        }
        let latencyMinimum = try container.decodeIfPresent(Double.self, forKey: .latencyMinimum)
        let latencyMaximum = try container.decodeIfPresent(Double.self, forKey: .latencyMaximum)
        if [latencyMinimum, latencyMaximum].contains(where: { !(0...Self.longestDelay).contains($0 ?? 0) })
            || (latencyMaximum ?? .infinity) < (latencyMinimum ?? 0)
        {
            throw invalid(
                .latencyMinimum,
                "latencies are seconds, not negative, at most \(Int(Self.longestDelay)), the minimum not above the maximum"
            )
        }
        let hangSeconds = try container.decodeIfPresent(Double.self, forKey: .hangSeconds)
        if let hangSeconds, !(hangSeconds > 0 && hangSeconds <= Self.longestDelay) {
            throw invalid(.hangSeconds, "hangSeconds is positive and at most \(Int(Self.longestDelay))")
        }
        let remaining = try container.decodeIfPresent(Int.self, forKey: .remaining)
        if let remaining, remaining < 0 {
            throw invalid(.remaining, "remaining is a count, not negative")
        }
        self.init(
            id: id,
            environment: environment,
            endpoint: try container.decode(FaultEndpoint.self, forKey: .endpoint),
            latencyMinimum: latencyMinimum,
            latencyMaximum: latencyMaximum,
            outage: try container.decodeIfPresent(Outage.self, forKey: .outage),
            hangSeconds: hangSeconds,
            status: try container.decodeIfPresent(Int.self, forKey: .status),
            isRetryable: try container.decodeIfPresent(Bool.self, forKey: .isRetryable),
            rateLimited: try container.decodeIfPresent(Bool.self, forKey: .rateLimited),
            probability: probability,
            untilMilliseconds: try container.decodeIfPresent(Int64.self, forKey: .untilMilliseconds),
            remaining: remaining
        )
    }

    func matches(environment: AppStoreEnvironment, endpoint: FaultEndpoint) -> Bool {
        self.endpoint == endpoint && (self.environment == nil || self.environment == environment.rawValue)
    }

    /// A latency to wait, drawn from the rule's range.
    var latency: Double? {
        guard let low = latencyMinimum else { return nil }
        let high = max(low, latencyMaximum ?? low)
        return high > low ? Double.random(in: low...high) : low
    }
}

/// The active faults, changed at run time through the admin API.
public final class FaultRegistry: Sendable {
    private let rules: Mutex<[FaultRule]>

    init(_ rules: [FaultRule]) {
        self.rules = Mutex(rules)
    }

    public var all: [FaultRule] { rules.withLock { $0 } }

    public func add(_ rule: FaultRule) { rules.withLock { $0.append(rule) } }

    /// Adds a rule unless one with its id is active; returns whether it was added.
    public func addIfNew(_ rule: FaultRule) -> Bool {
        rules.withLock { rules in
            guard !rules.contains(where: { $0.id == rule.id }) else { return false }
            rules.append(rule)
            return true
        }
    }

    public func remove(id: String) -> Bool {
        rules.withLock { rules in
            let before = rules.count
            rules.removeAll { $0.id == id }
            return rules.count != before
        }
    }

    public func removeAll() { rules.withLock { $0.removeAll() } }

    /// The rule that applies to one request now, if any (counting it against `remaining`).
    func take(environment: AppStoreEnvironment, endpoint: FaultEndpoint, now: Date = Date()) -> FaultRule? {
        rules.withLock { rules in
            let nowMs = Int64(now.timeIntervalSince1970 * 1000)
            rules.removeAll { rule in
                (rule.untilMilliseconds.map { $0 <= nowMs } ?? false) || rule.remaining == 0
            }
            for index in rules.indices where rules[index].matches(environment: environment, endpoint: endpoint) {
                if let p = rules[index].probability, Double.random(in: 0..<1) >= p { continue }
                if let remaining = rules[index].remaining { rules[index].remaining = remaining - 1 }
                return rules[index]
            }
            return nil
        }
    }

    /// Whether a reset-connection outage covers a request path right now (checked before routing).
    func resets(path: String) -> Bool {
        guard let (environment, endpoint) = Self.classify(path: path) else { return false }
        return rules.withLock { rules in
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            return rules.contains {
                $0.outage == .reset && $0.matches(environment: environment, endpoint: endpoint)
                    && ($0.untilMilliseconds.map { $0 > nowMs } ?? true) && $0.remaining != 0
            }
        }
    }

    /// Which environment and endpoint a request path addresses.
    static func classify(path: String) -> (AppStoreEnvironment, FaultEndpoint)? {
        let parts = path.split(separator: "/").map(String.init)
        guard !parts.isEmpty else { return nil }
        if parts[0] == "storekit", parts.count > 1, let environment = AppStoreEnvironment(parsing: parts[1]) {
            return (environment, .storeKit)
        }
        guard let environment = AppStoreEnvironment(parsing: parts[0]), parts.count > 1 else { return nil }
        if parts[1] == "verifyReceipt" { return (environment, .verifyReceipt) }
        if parts[1] == "inApps" { return (environment, .serverAPI) }
        return nil
    }
}
