import HTTPTypes
import Hummingbird
import Synchronization

/// The paths the router serves and the methods each one takes, so that a known path asked with a method it does
/// not take is answered 405 with `Allow`, not 404: the caller learns that the URL is right and the verb is wrong.
///
/// The router's own trie answers 404 in both cases; this table is filled from `Router.routes` once every route is
/// added, and consulted only for requests the router did not match.
public final class RouteMethods: Sendable {
    /// `headOfGet`: the router answers HEAD for every GET route (`RouterOptions.autoGenerateHeadEndpoints`), which
    /// `Router.routes` does not list; HEAD is then named in `Allow` beside GET.
    public init(headOfGet: Bool = false) {
        self.headOfGet = headOfGet
    }

    private let headOfGet: Bool

    private struct Entry: Sendable {
        var path: RouterPath
        var methods: Set<HTTPRequest.Method>
    }

    private let entries = Mutex<[Entry]>([])

    /// Takes the router's routes; the paths are grouped as the router lists them.
    public func record<Context>(_ routes: [Router<Context>.RouteDescription]) {
        var grouped: [String: Entry] = [:]
        for route in routes {
            grouped[route.path.description, default: Entry(path: route.path, methods: [])].methods.insert(route.method)
            if headOfGet, route.method == .get { grouped[route.path.description]?.methods.insert(.head) }
        }
        entries.withLock { $0 = Array(grouped.values) }
    }

    /// The methods that `path` takes, sorted for the `Allow` header; empty when no route has this path.
    public func methods(forPath path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        let allowed = entries.withLock { entries in
            entries.filter { Self.matches($0.path, segments) }.reduce(into: Set<HTTPRequest.Method>()) {
                $0.formUnion($1.methods)
            }
        }
        return allowed.sorted { $0.rawValue < $1.rawValue }
    }

    private static func matches(_ path: RouterPath, _ segments: [Substring]) -> Bool {
        var index = 0
        for element in path.components {
            if element.description == "**" { return true }  // a recursive wildcard takes the rest
            guard index < segments.count, element ~= segments[index] else { return false }
            index += 1
        }
        return index == segments.count
    }
}
