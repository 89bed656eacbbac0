import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The URL session TillClient's types use unless they are given another: Foundation's on Apple platforms,
/// FoundationNetworking's on Linux. TillClient speaks HTTP only through URLSession, so an app links no SwiftNIO.
public enum TillHTTP {
    /// Ephemeral (no cookies, no cache: every answer is about one customer, now), and without a request timeout of
    /// its own: each call has its deadline (`timeout:` of the client types), and a download its idle limit.
    public static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForRequest = 600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        return URLSession(configuration: configuration)
    }

    /// Shared by every TillClient object made without a session of its own.
    public static let shared = makeSession()
}
