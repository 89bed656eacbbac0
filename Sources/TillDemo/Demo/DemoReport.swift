import Foundation
import TillDevelopment

/// Prints `till demo`'s walk-through — a numbered step, what happens in it, then one ✓ or ✗ line per expectation
/// with its reason — and remembers which steps did not behave as expected.
///
/// ```
/// 3. Apple is slow
///    The simulator answers Apple's Server API after 3 to 6 seconds …
///    ✓ gems.100 delivered in 38 ms, before Apple answered
///    ✗ confirmed by Apple — still retrying after 15 s
/// ```
final class DemoReport {
    struct Step {
        var number: Int
        var title: String
        var passed = 0
        var failed = 0

        /// A step behaved as expected when every expectation held and there was at least one.
        var behaved: Bool { failed == 0 && passed > 0 }
    }

    private(set) var steps: [Step] = []
    private let write: (String) -> Void

    init(write: @escaping (String) -> Void = say) {
        self.write = write
    }

    /// Runs one step: its header, then `body`, which checks what happens. A thrown error fails the step.
    func step(_ title: String, _ explanation: String, _ body: () async throws -> Void) async {
        steps.append(Step(number: steps.count + 1, title: title))
        write("")
        write("\(steps.count). \(title)")
        for line in TextFormat.wrap(explanation, width: 100) { write("   " + line) }
        do {
            try await body()
        } catch {
            fail("the step stopped: \(error)")
        }
    }

    /// A detail of what happened.
    func note(_ text: String) { write("     " + text) }

    func pass(_ text: String) {
        record { $0.passed += 1 }
        write("   ✓ " + text)
    }

    func fail(_ text: String) {
        record { $0.failed += 1 }
        write("   ✗ " + text)
    }

    /// ✓ `text` when `condition` holds; otherwise ✗ `text`, with `reason`.
    func expect(_ condition: Bool, _ text: String, otherwise reason: @autoclosure () -> String) {
        if condition { pass(text) } else { fail(text + " — " + reason()) }
    }

    /// Prints the summary line and answers whether every step behaved as expected.
    func finish(elapsed: Duration) -> Bool {
        let failed = steps.filter { !$0.behaved }
        write("")
        if failed.isEmpty {
            write("✓ All \(steps.count) steps behaved as expected, in \(TextFormat.duration(elapsed)).")
        } else {
            let numbers = failed.map { "\($0.number) (\($0.title))" }.joined(separator: ", ")
            write(
                "✗ \(failed.count) of \(steps.count) steps did not behave as expected: \(numbers); "
                    + "in \(TextFormat.duration(elapsed))."
            )
        }
        return failed.isEmpty
    }

    private func record(_ change: (inout Step) -> Void) {
        if steps.isEmpty { steps.append(Step(number: 1, title: "setting up")) }
        change(&steps[steps.count - 1])
    }
}
