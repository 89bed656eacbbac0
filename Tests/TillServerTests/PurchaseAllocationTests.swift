import Foundation
import Testing
import TillTestSupport

/// What a purchase and a customer read allocate on the server, counted: the heap allocations and the bytes they ask
/// for, a request on average over 400 after 200 to warm (TillBench's `AllocationCount`). Counted by the mirrored malloc
/// interposer in `till-allocations`, a process of its own: the counters are the process's, and this one runs other
/// tests at the same time. Counts, not timings: the same code built the same way on the same toolchain allocates
/// nearly the same (three runs on a quiet machine differed by under 0.1 of an allocation; a loaded one adds a few, see
/// the budgets), so a change that allocates more a purchase fails here.
///
/// The budgets are those of `swift test`'s debug build (a release build allocates less: 778 a purchase and 119 a
/// read), about 3% above what the code asks, in brackets. A new Swift toolchain may move them; raising one is
/// a decision, made in the commit that needs it and said in its message (docs/benchmarks.md, "What CI counts").
@Suite(.sharingTheMachine)
struct PurchaseAllocationTests {
    struct Budget {
        var allocations: Double
        var bytes: Int
    }

    /// A consumable bought by a new customer, `POST /v1/receipts` through the server's router (2,208 allocations,
    /// 318,600 bytes): the JSON body decoded, the signed transaction verified (its chain cached), the ledger's
    /// transaction on an SQLite file, the snapshot signed and the answer encoded. 3,597 and 802,500 when first
    /// counted; then a transaction alone in its group stopped taking a savepoint, which copied each page it changed into
    /// SQLite's statement journal in memory (3,472; 683,700), and a JWS verifier stopped writing out, at every JWS, why a
    /// chain it had already found leads to none of its roots (2,397; 642,000), and SQLite stopped building a temporary
    /// table, with a page cache of its own, for each `CHECK (column IN (…))` of the tables a purchase writes.
    ///
    /// On 2026-12-07 a purchase asked 2,221 on a quiet machine, and 2,227 to 2,257 in six processes run at once: the
    /// budget of 2,275 left less than 1%. It is 2,290, 3% above the quiet count (see `customerRead`).
    static let purchase = Budget(allocations: 2_290, bytes: 330_000)
    /// `GET /v1/customers/{id}` of the customer just after their purchase (242 allocations, 42,812 bytes when the
    /// budget was set). 239 and 41,241 before SQLite's checks of a list were stored as comparisons. The read's
    /// statements are the same; a profile of the whole run puts the difference in SQLite parsing its longer
    /// definitions, not in the read's own stacks.
    ///
    /// On 2026-12-07 a read asked 245.0 on a quiet machine; in six processes run at once 248.0 to 250.5 (245.0 or
    /// 248.0 in a trial whose windows first waited for SQLite's checkpointing thread, not kept), and under the whole
    /// `swift test` 251.1, in two full runs of three, which failed the budget of 250 (and, it seems, CI the same day,
    /// whose log did not name the test). Mostly not a spread: a process counts 3 or 6 more for every one of its 400
    /// reads. What sets a process's count was not found. The budget is 258, 3% above the whole suite's count.
    static let customerRead = Budget(allocations: 258, bytes: 44_500)

    // The time limit also runs while the test waits for its share of the machine: under a whole `swift test` with
    // PostgreSQL, 3 minutes ran out for a test that takes 5 s alone. The process itself is killed after 150 s.
    @Test(.timeLimit(.minutes(10)))
    func aPurchaseAndACustomerReadAllocateWithinTheirBudgets() async throws {
        let run = try await TillExecutable.run(["400", "200"], timeout: .seconds(150), program: "till-allocations")
        #expect(run.status == 0, "\(run)")
        var figures: [String: (allocations: Double, bytes: Int)] = [:]
        for line in run.output.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let operation = words.first else { continue }
            var fields: [String: String] = [:]
            for word in words.dropFirst() {
                let pair = word.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
            }
            guard let allocations = fields["allocations_per_request"].flatMap(Double.init),
                let bytes = fields["bytes_per_request"].flatMap(Int.init)
            else { continue }
            figures[String(operation)] = (allocations, bytes)
        }
        if ProcessInfo.processInfo.environment["TILL_PRINT_COSTS"] != nil { print("ALLOCATIONS \(run.output)") }
        for (operation, budget) in [("purchase", Self.purchase), ("customer_read", Self.customerRead)] {
            let figure = try #require(figures[operation], "no \(operation) line in \(run)")
            // Nothing counted would be the interposer not in the process (the program refuses to run then).
            #expect(figure.allocations > 0 && figure.bytes > 0, "\(operation): \(run.output)")
            #expect(
                figure.allocations <= budget.allocations,
                "\(operation): \(figure.allocations) allocations a request, over the budget of \(budget.allocations)"
            )
            #expect(
                figure.bytes <= budget.bytes,
                "\(operation): \(figure.bytes) bytes allocated a request, over the budget of \(budget.bytes)"
            )
        }
    }
}
