import Foundation
import Hummingbird
import JWTKit
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Retention Messaging's realtime call judged as Apple judges it: an answer naming a message the App Store cannot
/// show is no answer (the default message is shown, and a performance test of such answers fails).
@Suite(.sharingTheMachine)
struct RetentionMessagingTests {
    @Test func anAnswerNamingAnUnknownMessageFallsBackAndFailsThePerformanceTest() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let retention = simulator.retention
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let message = UUID().uuidString.lowercased()
        try await retention.uploadMessage(
            message, body: Array(#"{"header":"Stay","body":"Your plan keeps your data."}"#.utf8), app: fixture.app,
            environment: .sandbox
        )
        try await retention.configureDefaultMessage(
            productId: "premium.monthly", locale: "en-US",
            body: Array(#"{"messageIdentifier":"\#(message)"}"#.utf8), app: fixture.app, environment: .sandbox
        )
        let unknown = #"{"message":{"messageIdentifier":"\#(UUID().uuidString.lowercased())"}}"#
        try await fixture.withRealtimeURL(answering: unknown) {
            let shown = try await retention.retentionMessage(
                deviceId: fixture.phone.id, originalTransactionId: original, locale: "en-US", environment: .sandbox
            )
            #expect(shown.source == "default" && shown.messageIdentifier == message)
            #expect(shown.realtimeOutcome == "INVALID_RESPONSE")

            let test = try await retention.initiatePerformanceTest(
                body: Array(#"{"originalTransactionId":"\#(original)"}"#.utf8), app: fixture.app, environment: .sandbox
            )
            let requestId = try #require(test.requestId)
            var result = try await retention.performanceTestResults(requestId, app: fixture.app, environment: .sandbox)
            for _ in 0..<300 where result.result == .pending {
                try await Task.sleep(for: .milliseconds(50))
                result = try await retention.performanceTestResults(requestId, app: fixture.app, environment: .sandbox)
            }
            #expect(result.result == .fail && result.successRate == 0)
            #expect(result.failures?["INVALID_RESPONSE"] == 20)
        }
    }
}

extension RetentionMessagingTests {
    /// The developer's realtime answer offers a promotional offer (a JWS signed with the app's key); the customer
    /// accepts it and buys with what the App Store showed.
    @Test func aRetentionOfferIsShownAndBoughtWithItsSignature() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let retention = simulator.retention
        _ = try await simulator.offers.createOffer(
            appAppleId: fixture.app.appAppleId, productId: "premium.monthly",
            OfferInput(kind: .promotional, offerIdentifier: "stay", discountType: .payUpFront, duration: "P3M", price: 990)
        )
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let message = UUID().uuidString.lowercased()
        try await retention.uploadMessage(
            message, body: Array(#"{"header":"Stay","body":"Three months for the price of one."}"#.utf8),
            app: fixture.app, environment: .sandbox
        )
        let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        struct Claims: JWTPayload {
            var iss: IssuerClaim, iat: IssuedAtClaim, aud: AudienceClaim
            var bid: String, nonce: String, productId: String, offerIdentifier: String
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: key.privateKey), kid: JWKIdentifier(string: key.keyId))
        let jws = try await keys.sign(
            Claims(iss: .init(value: key.issuerId), iat: .init(value: Date()), aud: .init(value: ["promotional-offer"]),
                   bid: SimulatorFixture.bundleId, nonce: UUID().uuidString.lowercased(), productId: "premium.monthly",
                   offerIdentifier: "stay"),
            kid: JWKIdentifier(string: key.keyId)
        )
        let answer = #"{"promotionalOffer":{"messageIdentifier":"\#(message)","promotionalOfferSignatureV2":"\#(jws)"}}"#
        try await fixture.withRealtimeURL(answering: answer) {
            let shown = try await retention.retentionMessage(
                deviceId: fixture.phone.id, originalTransactionId: original, locale: "en-US", environment: .sandbox
            )
            #expect(shown.source == "realtime" && shown.header == "Stay" && shown.offerProductId == "premium.monthly")
            let offer = try #require(shown.paymentOffer)
            let accepted = try await simulator.payments.addPayment(
                PaymentRequest(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId,
                               productId: "premium.monthly", promotionalOffer: offer),
                environment: .sandbox
            )
            #expect(accepted.state == .purchased)
            let subscription = try #require(
                try await simulator.store.subscriptions.subscription(originalTransactionId: original, on: simulator.store.sql)
            )
            #expect(subscription.appliedOffer?.identifier == "stay")
        }
    }
}

extension RetentionMessagingTests {
    /// Images and messages, as Apple refuses them: an identifier uploaded twice, a delete of one that is not there,
    /// an image a message still uses; after the message goes, the image can go too.
    @Test func imagesAndMessagesAreRefusedAsAppleRefusesThem() async throws {
        let fixture = try await SimulatorFixture.make()
        let retention = fixture.simulator.retention
        func refusal(_ body: () async throws -> Void) async -> Int? {
            do {
                try await body()
                return nil
            } catch let failure as ServerAPIFailure {
                return failure.error?.errorCode
            } catch {
                return -1
            }
        }
        let image = UUID().uuidString.lowercased()
        let png = Self.png(width: 3840, height: 1080)
        try await retention.uploadImage(image, size: nil, png: png, app: fixture.app, environment: .sandbox)
        #expect(
            await refusal {
                try await retention.uploadImage(image, size: nil, png: png, app: fixture.app, environment: .sandbox)
            } == ServerAPIErrorCode.imageAlreadyExists.rawValue
        )
        let message = UUID().uuidString.lowercased()
        let body = #"{"header":"Stay","body":"Keep it.","image":{"imageIdentifier":"\#(image)","altText":"A view"}}"#
        try await retention.uploadMessage(message, body: Array(body.utf8), app: fixture.app, environment: .sandbox)
        #expect(
            await refusal {
                try await retention.uploadMessage(message, body: Array(body.utf8), app: fixture.app, environment: .sandbox)
            } == ServerAPIErrorCode.messageAlreadyExists.rawValue
        )
        #expect(
            await refusal { try await retention.deleteImage(image, app: fixture.app, environment: .sandbox) }
                == ServerAPIErrorCode.imageInUse.rawValue
        )
        try await retention.deleteMessage(message, app: fixture.app, environment: .sandbox)
        #expect(
            await refusal { try await retention.deleteMessage(message, app: fixture.app, environment: .sandbox) }
                == ServerAPIErrorCode.messageNotFound.rawValue
        )
        try await retention.deleteImage(image, app: fixture.app, environment: .sandbox)
        #expect(
            await refusal { try await retention.deleteImage(image, app: fixture.app, environment: .sandbox) }
                == ServerAPIErrorCode.imageNotFound.rawValue
        )
        #expect(try await retention.imageList(app: fixture.app, environment: .sandbox).imageIdentifiers?.isEmpty == true)
    }

    /// The start of an opaque greyscale PNG of `width` × `height`: its signature, its header chunk and its end (the
    /// simulator reads the header; the checksums are not checked).
    static func png(width: Int, height: Int) -> [UInt8] {
        func uint32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        let header = uint32(width) + uint32(height) + [8, 0, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + uint32(header.count) + Array("IHDR".utf8) + header
            + [0, 0, 0, 0] + uint32(0) + Array("IEND".utf8) + [0, 0, 0, 0]
    }
}

extension SimulatorFixture {
    /// Runs `body` with a developer's realtime URL on a loopback port, configured for the sandbox, that answers
    /// every realtime request with `answer` (JSON) after `delay`.
    func withRealtimeURL(answering answer: String, after delay: Duration = .zero, _ body: () async throws -> Void)
        async throws
    {
        let router = Router()
        router.post("/retention") { _, _ in
            if delay > .zero { try await Task.sleep(for: delay) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: answer))
            )
        }
        try await withServices({ report in
            Application(
                router: router,
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await report($0.localAddress?.port ?? 0) }
            )
        }) { port in
            try await simulator.retention.configureRealtimeURL(
                body: Array(#"{"realtimeURL":"http://127.0.0.1:\#(port)/retention"}"#.utf8), app: app,
                environment: .sandbox
            )
            try await body()
        }
    }
}
