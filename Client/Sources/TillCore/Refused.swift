/// Why a room refuses what it was asked: one case per reason, in the room that refuses. Its `code` is the stable token
/// a client branches on (the case's name for a `String` enum).
///
/// Rooms throw `Refused<TheirReason>` and know nothing of HTTP; the server's and the simulator's HTTP layers map each
/// room's reasons to a status, one exhaustive switch per room, so a new reason does not build until it has one.
public protocol RefusalReason: Sendable, Hashable {
    var code: String { get }
}

extension RefusalReason where Self: RawRepresentable, RawValue == String {
    public var code: String { rawValue }
}

/// Any room's refusal, for code that only needs to tell a refusal (the request was wrong and will stay wrong) from a
/// failure.
public protocol Refusal: Error, CustomStringConvertible {
    var code: String { get }
    var message: String { get }
}

/// A refusal: a room's reason and a message for people.
public struct Refused<Reason: RefusalReason>: Refusal, Sendable, Hashable {
    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var code: String { reason.code }
    public var description: String { "\(code): \(message)" }
}
