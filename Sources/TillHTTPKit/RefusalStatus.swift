import HTTPTypes
import TillCore

/// The HTTP layer's mapping of one room's reasons to statuses: each server declares, beside its routes, one
/// conformance per room with one exhaustive switch (`case .productNotFound: .notFound`). The room itself throws
/// `Refused<Reason>` and never names a status.
public protocol RefusalStatus: RefusalReason {
    var status: HTTPResponse.Status { get }
    /// Headers the answer carries besides its body (`Retry-After`); none unless a reason says.
    var headers: HTTPFields { get }
}

extension RefusalStatus {
    public var headers: HTTPFields { [:] }
}

/// A refusal whose room has a mapping: what `TillHTTPErrorMiddleware` answers with.
public protocol HTTPRefusal: Error {
    var httpError: TillHTTPError { get }
}

extension Refused: HTTPRefusal where Reason: RefusalStatus {
    public var httpError: TillHTTPError { TillHTTPError(reason.status, reason.code, message, headers: reason.headers) }
}

extension TillHTTPError {
    /// The answer an error gives when it is a refusal (a room's, with its mapping, or one made here), else nil.
    public static func refusal(_ error: any Error) -> TillHTTPError? {
        switch error {
        case let error as TillHTTPError: error
        case let refusal as any HTTPRefusal: refusal.httpError
        default: nil
        }
    }
}
