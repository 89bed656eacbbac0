import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// The realtime deadline itself: Apple's 700 ms by default (what `till simulator` runs with), and a realtime URL
/// that answers after the deadline is `TIMED_OUT` for the customer and in a performance test. The other Retention
/// Messaging tests run with a generous deadline, so that a receiver slow on purpose here (or a loaded machine) turns
/// nothing else red.
@Suite(.sharingTheMachine)
struct RetentionDeadlineTests {
    @Test func theDeadlineIsApples700MillisecondsUnlessConfigured() {
        #expect(SimulatorConfiguration().realtimeTimeout == .milliseconds(700))
        #expect(PerformanceTestConfig.simulator(threshold: .milliseconds(700)).responseTimeThreshold == 700)
    }

    @Test func anAnswerAfterTheDeadlineIsTimedOutAndFailsThePerformanceTest() async throws {
        // Short enough to keep the test quick; the receiver answers long after it, however loaded the machine.
        let deadline = Duration.milliseconds(200)
        let fixture = try await SimulatorFixture.make(realtimeDeadline: deadline)
        let retention = fixture.simulator.retention
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
        let valid = #"{"message":{"messageIdentifier":"\#(message)"}}"#
        try await fixture.withRealtimeURL(answering: valid, after: .seconds(2)) {
            let shown = try await retention.retentionMessage(
                deviceId: fixture.phone.id, originalTransactionId: original, locale: "en-US", environment: .sandbox
            )
            // The valid answer came too late: the customer sees the default message.
            #expect(shown.realtimeOutcome == "TIMED_OUT")
            #expect(shown.source == "default" && shown.messageIdentifier == message)

            let test = try await retention.initiatePerformanceTest(
                body: Array(#"{"originalTransactionId":"\#(original)"}"#.utf8), app: fixture.app, environment: .sandbox
            )
            #expect(test.config?.responseTimeThreshold == 200)
            let requestId = try #require(test.requestId)
            try await waitUntil {
                try await retention.performanceTestResults(requestId, app: fixture.app, environment: .sandbox).result
                    != .pending
            }
            let result = try await retention.performanceTestResults(requestId, app: fixture.app, environment: .sandbox)
            #expect(result.result == .fail && result.successRate == 0)
            #expect(result.failures?["TIMED_OUT"] == 20)
        }
    }
}
