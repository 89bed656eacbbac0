import Foundation
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// StoreKit Testing in Xcode: an Xcode account's purchases are signed with one self-signed certificate (what Xcode's
/// "Save Public Certificate" exports), carry the Xcode environment, and reach no Apple server.
@Suite(.sharingTheMachine)
struct XcodeEnvironmentTests {
    @Test(arguments: TestDatabase.all) func xcodePurchasesAreSignedByTheStoreKitTestCertificateAlone(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Xcode"))
        let device = try await simulator.appStoreConnect.createDevice(
            accountId: account.id,
            DeviceInput(name: "Simulator")
        )
        let bought = try await simulator.payments.addPayment(
            PaymentRequest(deviceId: device.id, bundleId: SimulatorFixture.bundleId, productId: "premium.monthly"),
            environment: .xcode
        )
        let jws = try #require(bought.signedTransaction)
        #expect(bought.transactionReceipt == nil && bought.transactionId == "1")
        let header =
            try JSONSerialization.jsonObject(
                with: Data(try #require(Base64.decode(jws.split(separator: ".")[0], alphabet: .url)))
            ) as? [String: Any]
        #expect((header?["x5c"] as? [String])?.count == 1)

        // Trusted by that certificate only, as a server configured with it would.
        let xcode = SignedDataVerifier(
            .init(
                anchors: TrustAnchors(roots: [simulator.signer.xcodeCertificate]),
                bundleId: SimulatorFixture.bundleId,
                environment: .xcode
            )
        )
        guard case .valid(let verified) = await xcode.verify(jws, as: JWSTransactionDecodedPayload.self) else {
            throw Failure("the Xcode transaction does not verify with the StoreKit test certificate")
        }
        #expect(verified.payload.environment == .xcode)
        guard case .invalid = await fixture.jwsVerifier.verify(jws, as: JWSTransactionDecodedPayload.self) else {
            throw Failure("the sandbox's verifier accepted Xcode data")
        }

        // No Apple server: no notification, no receipt.
        let log = try await simulator.store.notifications.notifications(
            appAppleId: fixture.app.appAppleId,
            environment: .xcode,
            from: 0,
            to: .max,
            on: simulator.store.sql
        )
        #expect(log.isEmpty)
        await #expect {
            _ = try await simulator.payments.appReceipt(
                deviceId: device.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .xcode
            )
        } throws: { $0 is any Refusal }

        guard PythonJudge.libraryInstalled else { return }
        let renewal = try await simulator.payments.signedRenewalInfo(
            deviceId: device.id,
            originalTransactionId: "1",
            environment: .xcode
        )
        let appTransaction = try await simulator.payments.signedAppTransaction(
            deviceId: device.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .xcode
        )
        let (status, summary) = try await PythonJudge.run(
            "xcode_judge.py",
            spec: [
                "bundleId": SimulatorFixture.bundleId, "transactions": [jws], "renewalInfos": [renewal],
                "appTransactions": [appTransaction],
            ]
        )
        try #require(status == 0, "\(summary)")
        #expect(((summary["transactions"] as? [[String: Any]])?.first?["environment"] as? String) == "Xcode")
        #expect(
            summary["renewalInfos"] as? [String] == ["Xcode"] && summary["appTransactions"] as? [String] == ["Xcode"]
        )
    }
}
