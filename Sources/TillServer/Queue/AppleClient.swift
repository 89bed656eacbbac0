import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import TillCore
import TillFormats
import TillHTTPKit

/// Calls Apple (or the simulator): verifyReceipt and the App Store Server API.
struct AppleClient: Sendable {
    let http: HTTPClient
    let endpoints: AppleEndpoints
    let timeout: Duration

    /// What came back from one call.
    enum Answer: Sendable {
        /// An HTTP answer: status and body.
        case http(status: Int, body: [UInt8])
        /// No answer: the cause (`timeout`, `connection reset`, …).
        case transport(String)
        /// Not sent: this server's settings for the call are unusable (no URL, a key that does not load).
        case misconfigured(String)
    }

    private var timeAmount: TimeAmount {
        .nanoseconds(
            Int64(timeout.components.seconds) * 1_000_000_000 + Int64(timeout.components.attoseconds / 1_000_000_000)
        )
    }

    func verifyReceipt(_ environment: AppStoreEnvironment, receiptData: String, password: String?) async -> Answer {
        guard let url = endpoints.verifyReceipt[environment] else {
            return .misconfigured("no verifyReceipt URL for \(environment)")
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(Self.verifyReceiptBody(receiptData: receiptData, password: password))
        return await execute(request)
    }

    /// `{"receipt-data":…,"password":…}`. Receipts are kilobytes of base64 and shared secrets are hex, neither of
    /// which JSON escapes: they are written as they are (escaping them character by character was a visible
    /// share of a confirmation's cost); anything else goes through the encoder.
    static func verifyReceiptBody(receiptData: String, password: String?) -> ByteBuffer {
        func plain(_ text: String) -> Bool {
            text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="),
                    UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
        }
        guard plain(receiptData), password.map(plain) ?? true else {
            let body = try? JSONEncoder().encode(VerifyReceiptRequest(receiptData: receiptData, password: password))
            return ByteBuffer(bytes: body ?? Data())
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(receiptData.utf8.count + (password?.utf8.count ?? 0) + 40)
        buffer.writeString(#"{"receipt-data":""#)
        buffer.writeString(receiptData)
        if let password {
            buffer.writeString(#"","password":""#)
            buffer.writeString(password)
        }
        buffer.writeString(#""}"#)
        return buffer
    }

    /// Get Transaction Info, authenticated with the app's App Store Server API key.
    func transactionInfo(_ environment: AppStoreEnvironment, transactionId: String, app: ServerApp) async -> Answer {
        guard let base = endpoints.serverAPI[environment] else {
            return .misconfigured("no App Store Server API URL for \(environment)")
        }
        guard let token = try? await bearerToken(app: app) else {
            return .misconfigured("the app's App Store Server API key is unusable")
        }
        var request = HTTPClientRequest(url: "\(base)/inApps/v1/transactions/\(transactionId)")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        return await execute(request)
    }

    private func execute(_ request: HTTPClientRequest) async -> Answer {
        do {
            let response = try await http.execute(request, timeout: timeAmount)
            let body = try await response.body.collect(upTo: 4 << 20)
            return .http(status: Int(response.status.code), body: Array(body.readableBytesView))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .transport("timeout")
        } catch let error as HTTPClientError where error == .connectTimeout {
            return .transport("connect timeout")
        } catch let error as HTTPClientError where error == .remoteConnectionClosed {
            return .transport("connection closed")
        } catch {
            return .transport("\(error)".prefix(200).description)
        }
    }

    /// An ES256 bearer token for the App Store Server API: kid, iss, aud `appstoreconnect-v1`, bid, five minutes.
    private func bearerToken(app: ServerApp) async throws -> String {
        guard let pem = app.apiPrivateKey, let keyId = app.apiKeyId, let issuer = app.apiIssuerId else {
            throw TillHTTPError.badRequest("noAPIKey", "the app has no App Store Server API key")
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyId))
        let now = Date()
        let claims = APIClaims(
            iss: .init(value: issuer),
            iat: .init(value: now),
            exp: .init(value: now.addingTimeInterval(300)),
            aud: .init(value: ["appstoreconnect-v1"]),
            bid: app.bundleId
        )
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyId), header: ["typ": "JWT"])
    }
}

struct APIClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var aud: AudienceClaim
    var bid: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
