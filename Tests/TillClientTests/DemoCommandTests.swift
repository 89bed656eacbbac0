import Foundation
import Testing
import TillTestSupport

/// `till demo`, run as a user runs it: every step of the story behaves as expected, within two minutes.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct DemoCommandTests {
    /// One numbered step of the demo's output and its ✓ / ✗ lines.
    struct Step {
        var title: String
        var checks: [String] = []
    }

    static let titles = [
        "The catalogue from the server",
        "A purchase of each product type",
        "Apple is slow",
        "Apple is down",
        "The Till server unreachable: the outbox",
        "A magazine issue delivered by the server, interrupted and resumed",
        "Restore on a second device",
        "Subscription renewals in accelerated time",
        "A refund revokes access",
        "A sandbox receipt sent to production (21007)",
        "A tampered entitlement store is rejected",
        "What the app's backend received",
    ]

    static func steps(in output: String) -> [Step] {
        var steps: [Step] = []
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if let dot = line.firstIndex(of: "."), !line.hasPrefix(" "), Int(line[..<dot]) != nil {
                steps.append(Step(title: String(line[line.index(dot, offsetBy: 2)...])))
            } else if line.hasPrefix("   ✓ ") || line.hasPrefix("   ✗ "), !steps.isEmpty {
                steps[steps.count - 1].checks.append(String(line.dropFirst(3)))
            }
        }
        return steps
    }

    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func theDemoWalksThroughTheWholeStoryAndEveryStepPasses() async throws {
        // How long the demo takes is a figure for docs/demo.md, not an assertion: a loaded runner is slower.
        let run = try await TillExecutable.run(["demo"], timeout: .seconds(600))

        #expect(run.status == 0, "\(run)")
        let steps = Self.steps(in: run.output)
        #expect(steps.map(\.title) == Self.titles, "\(run)")
        for step in steps {
            #expect(!step.checks.isEmpty, "\(step.title) checked nothing")
            #expect(step.checks.allSatisfy { $0.hasPrefix("✓") }, "\(step.title): \(step.checks)")
        }
        #expect(run.output.contains("✓ All 12 steps behaved as expected"), "\(run)")
        // The app's backend heard of each change: a purchase, Apple's confirmation, a renewal, the refund.
        for type in ["credits.purchased", "purchase.confirmed", "subscription.renewed", "purchase.refunded"] {
            #expect(run.output.contains("→ backend: \(type): alice"), "\(type): \(run)")
        }
        // It cleans up after itself.
        let directory = run.output.components(separatedBy: "files in ").dropFirst().first?
            .components(separatedBy: " until the end").first
        #expect(directory?.contains("till-demo-") == true, "\(run)")
        #expect(!FileManager.default.fileExists(atPath: directory ?? "/"), "\(directory ?? "")")
    }
}
