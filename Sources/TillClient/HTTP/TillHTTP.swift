import AsyncHTTPClient
import NIOCore

/// The HTTP client TillClient's types use unless they are given another.
public enum TillHTTP {
    /// A connection the server refuses fails at once instead of being retried until the request's time limit
    /// (AsyncHTTPClient's default): TillClient has its own retries (the outbox, the unfinished transactions), and an
    /// app should learn in milliseconds, not seconds, that its purchase waits in the outbox.
    public static let configuration: HTTPClient.Configuration = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        return configuration
    }()

    /// Shared by every TillClient object made without a client of its own; never shut down.
    public static let shared = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}
