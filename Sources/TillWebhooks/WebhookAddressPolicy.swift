import Foundation
import NIOCore
import TillCore
import TillHTTPKit
import TillLedger

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where deliveries may go (docs/events.md, "Safe by default"). An endpoint's URL must be HTTPS; plain HTTP is
/// accepted only to a loopback host, and only with `allowHTTPToLoopback` (development mode turns it on). The address a
/// delivery connects to must be public, unless `allowPrivateAddresses` lets it be private, loopback or link-local
/// (loopback is also allowed with `allowHTTPToLoopback`); it is checked on the socket itself, after DNS resolution,
/// on every connection and so on every redirect (`WebhookClient`), so a host whose name later resolves elsewhere
/// cannot reach the server's own network.
package struct WebhookAddressPolicy: Sendable {
    package var allowHTTPToLoopback: Bool
    package var allowPrivateAddresses: Bool

    package init(_ settings: WebhookSettings) {
        allowHTTPToLoopback = settings.allowHTTPToLoopback
        allowPrivateAddresses = settings.allowPrivateAddresses
    }

    /// What kind of address an IP address is, for the policy.
    package enum AddressClass: String, Sendable {
        case `public`
        case loopback
        /// RFC 1918, carrier-grade NAT (100.64/10), unique local IPv6 (fc00::/7).
        case `private`
        case linkLocal
        /// Unspecified, multicast, broadcast, documentation and other reserved ranges: never a receiver.
        case reserved
    }

    /// A URL an endpoint may have, or `invalidWebhookURL` saying why not.
    package func check(url text: String) throws -> URL {
        func refuse(_ why: String) -> WebhookRefusal { WebhookRefusal(.invalidWebhookURL, why) }
        guard text.utf8.count <= 2000, let url = URL(string: text), let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty
        else { throw refuse("\(text.prefix(100)) is not an absolute http(s) URL of at most 2,000 characters") }
        guard components.user == nil && components.password == nil else {
            throw refuse("a webhook URL carries no credentials: receivers check the signature instead")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw refuse("a port is 1 to 65535, not \(port)")
        }
        let literal = Self.addressClass(ofLiteral: host)
        let loopbackHost = literal == .loopback || host.lowercased() == "localhost"
        switch scheme {
        case "https":
            break
        case "http":
            guard allowHTTPToLoopback else {
                throw refuse(
                    "webhooks go over HTTPS; plain HTTP only to a loopback host, with webhooks.allow-http-loopback "
                        + "(on by default in development mode)"
                )
            }
            guard loopbackHost else {
                throw refuse("plain HTTP goes only to a loopback host (127.0.0.1, ::1, localhost); use HTTPS")
            }
        default:
            throw refuse("a webhook URL is https://… (not \(scheme))")
        }
        if let literal, let why = refusal(of: literal) { throw refuse("\(host) is \(why)") }
        return url
    }

    /// Why a connection to an address of this class is refused; nil when it is allowed.
    package func refusal(of kind: AddressClass) -> String? {
        switch kind {
        case .public:
            nil
        case .loopback:
            allowHTTPToLoopback || allowPrivateAddresses
                ? nil
                : "a loopback address (allowed with webhooks.allow-private-addresses or "
                    + "webhooks.allow-http-loopback, which is on by default in development mode)"
        case .private, .linkLocal:
            allowPrivateAddresses
                ? nil
                : "a \(kind == .private ? "private" : "link-local") address (allowed with webhooks.allow-private-addresses)"
        case .reserved:
            "a reserved address, never a receiver"
        }
    }

    /// Why the address a connection reached is refused; nil when it is allowed.
    package func refusal(of address: SocketAddress?) -> String? {
        guard let bytes = address.flatMap(Self.bytes(of:)) else { return "not an IP address" }
        return refusal(of: Self.addressClass(of: bytes)).map { "\(address?.ipAddress ?? "?") is \($0)" }
    }

    /// The class of an IP literal (`127.0.0.1`, `[::1]`, `::1`); nil for a name. An IPv4 address in any of the
    /// forms the system resolver reads as one (`167772161`, `012.0.0.1`, `10.1`, `0x0a.0.0.1`, a trailing dot) is a
    /// literal too: a delivery would resolve it to that address, so the URL is judged by it when it is given.
    package static func addressClass(ofLiteral host: String) -> AddressClass? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let address = try? SocketAddress(ipAddress: bare, port: 0), let bytes = bytes(of: address) {
            return addressClass(of: bytes)
        }
        let name = bare.hasSuffix(".") ? String(bare.dropLast()) : bare
        guard !name.isEmpty, name.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == "x" || $0 == "X" }) else {
            return nil
        }
        var address = in_addr()
        guard inet_aton(name, &address) != 0 else { return nil }
        return addressClass(of: withUnsafeBytes(of: &address) { Array($0) })
    }

    /// An IP address's 4 or 16 bytes.
    package static func bytes(of address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            var raw = v4.address.sin_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }

    /// The class of an IPv4 (4 bytes) or IPv6 (16 bytes) address. An IPv4-mapped or NAT64 IPv6 address is the class
    /// of the IPv4 address it carries.
    package static func addressClass(of bytes: [UInt8]) -> AddressClass {
        if bytes.count == 4 { return ipv4Class(bytes[0], bytes[1], bytes[2], bytes[3]) }
        guard bytes.count == 16 else { return .reserved }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] == 1 ? .loopback : .reserved }  // ::1, ::
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {  // ::ffff:a.b.c.d
            return ipv4Class(bytes[12], bytes[13], bytes[14], bytes[15])
        }
        if Array(bytes[0..<12]) == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] {  // 64:ff9b::/96, NAT64
            return ipv4Class(bytes[12], bytes[13], bytes[14], bytes[15])
        }
        switch bytes[0] {
        case 0xFE where bytes[1] & 0xC0 == 0x80: return .linkLocal  // fe80::/10
        case 0xFE where bytes[1] & 0xC0 == 0xC0: return .private  // fec0::/10, the deprecated site-local
        case 0xFC, 0xFD: return .private  // fc00::/7
        case 0xFF: return .reserved  // multicast
        case 0x20 where bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8: return .reserved  // 2001:db8::/32
        default: return .public
        }
    }

    private static func ipv4Class(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> AddressClass {
        switch (a, b) {
        case (127, _): .loopback
        case (10, _), (172, 16...31), (192, 168), (100, 64...127): .private
        case (169, 254): .linkLocal
        case (0, _), (224...255, _): .reserved  // "this network", multicast, reserved and broadcast
        case (192, 0) where c == 2, (198, 51) where c == 100, (203, 0) where c == 113: .reserved  // documentation
        case (198, 18...19): .reserved  // benchmarking
        default: .public
        }
    }
}
