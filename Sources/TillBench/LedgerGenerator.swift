import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillLedger
import TillServer
import TillStorage

/// Writes a big ledger, as a server that sold for two years would hold it, for the console's benchmark (`till bench
/// console`) and for the tests that check the console's queries use indexes (at a small size).
///
/// The server makes the schema (its migrations) and the app and catalogue (the demo app's, with no Apple key, so a
/// server run on the file confirms nothing with Apple); the rows are written in bulk, in the shapes the ledger writes:
/// customers (a tenth with a guest id linked), ledger rows, the books, balance entries, submissions with their
/// attempt, notifications (decoded), events, subscription states, and a few hundred submissions waiting for Apple or
/// dead-lettered. Then the server builds its figures from them (`Figures.rebuild`). A seeded generator makes the same
/// ledger for the same shape.
///
/// Customers: nineteen in twenty in production, the rest in the sandbox; four in five pay in USD, then EUR and GBP.
/// Three in five subscribe (one in ten of them yearly; one in six starts with a week's free trial), staying each
/// month with a probability of 0.9 (a year with 0.7); a third buy gems, a fifth Pro. One paid purchase in sixty is
/// refunded, a third of those by half.
public struct LedgerGenerator: Sendable {
    public struct Shape: Sendable {
        public var transactions: Int
        public var customers: Int
        /// How far back the first purchases go.
        public var days: Int
        public var seed: UInt64

        public init(transactions: Int, customers: Int, days: Int = 730, seed: UInt64 = 20_261_126) {
            self.transactions = transactions
            self.customers = customers
            self.days = days
            self.seed = seed
        }
    }

    /// What was written.
    public struct Written: Sendable, CustomStringConvertible {
        public var transactions = 0
        public var customers = 0
        public var finance = 0
        public var events = 0
        public var submissions = 0
        public var notifications = 0
        public var seconds = 0.0

        public var description: String {
            "transactions=\(transactions) customers=\(customers) finance=\(finance) events=\(events) "
                + "submissions=\(submissions) notifications=\(notifications) seconds=\(String(format: "%.1f", seconds))"
        }
    }

    public static let bundleId = "com.example.till"
    static let day: Int64 = 86_400_000

    let shape: Shape
    let now: Int64

    public init(_ shape: Shape, now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) {
        self.shape = shape
        self.now = now
    }

    /// Writes the ledger into `server`'s database (a new one: the app must not exist yet).
    public func write(into server: PurchaseServer, progress: @Sendable (String) -> Void = { _ in }) async throws
        -> Written
    {
        let clock = ContinuousClock()
        let start = clock.now
        try await Self.prepareApp(server)
        var random = SplitMix64(seed: shape.seed)
        var batch = Batch()
        var written = Written()
        let database = server.database
        var nextTransaction: Int64 = 3_000_000_000_000_000
        func flushIfFull(force: Bool = false) async throws {
            guard force || batch.rows >= 20_000 else { return }
            let full = batch
            batch.clear()
            try await database.transaction { db in try await full.write(to: database, on: db) }
            progress("\(written.transactions) transactions, \(written.customers) customers")
        }
        let ratio = Double(shape.transactions) / Double(max(1, shape.customers))
        for customer in 0..<shape.customers {
            let customerId = String(format: "customer-%07d", customer)
            written.customers += 1
            let environment: AppStoreEnvironment = random.chance(1, in: 20) ? .sandbox : .production
            let currency = random.chance(4, in: 5) ? "USD" : random.chance(3, in: 5) ? "EUR" : "GBP"
            let first =
                now - Int64(random.next(below: UInt64(shape.days))) * Self.day
                - Int64(random.next(below: UInt64(Self.day)))
            batch.customer(bundleId: Self.bundleId, customerId: customerId, at: first)
            if random.chance(1, in: 10) {
                batch.guest(bundleId: Self.bundleId, guestId: "device-" + customerId, of: customerId, at: first)
            }
            // What this customer may buy keeps the ledger on course for its size: the customers so far times the
            // transactions per customer, less what is written.
            let due = Int((Double(customer + 1) * ratio).rounded()) - written.transactions
            var budget = max(0, due)
            var purchases: [Purchase] = []
            if budget > 0 && random.chance(3, in: 5) {
                let yearly = random.chance(1, in: 10)
                let trial = !yearly && random.chance(1, in: 6)
                var date = first
                var index = 0
                let original = nextTransaction
                while date < now && budget > 0 {
                    let isTrial = trial && index == 0
                    let length = isTrial ? 7 * Self.day : yearly ? 365 * Self.day : 30 * Self.day
                    purchases.append(
                        Purchase(
                            id: nextTransaction,
                            original: original,
                            product: yearly ? "premium.yearly" : "premium.monthly",
                            type: "autoRenewable",
                            date: date,
                            expires: date + length,
                            price: isTrial ? 0 : yearly ? 9990 : 990,
                            introductory: isTrial
                        )
                    )
                    nextTransaction += 1
                    budget -= 1
                    index += 1
                    date += length
                    if !isTrial && !random.chance(yearly ? 7 : 19, in: yearly ? 10 : 20) { break }
                }
            }
            if budget > 0 && random.chance(1, in: 5) {
                purchases.append(
                    Purchase(
                        id: nextTransaction,
                        original: nextTransaction,
                        product: "pro",
                        type: "nonConsumable",
                        date: first,
                        expires: nil,
                        price: 4990,
                        introductory: false
                    )
                )
                nextTransaction += 1
                budget -= 1
            }
            // Gems make up the rest (a customer who buys any buys a few).
            for _ in 0..<min(budget, 40) {
                let date = first + Int64(random.next(below: UInt64(max(1, now - first))))
                purchases.append(
                    Purchase(
                        id: nextTransaction,
                        original: nextTransaction,
                        product: "gems.100",
                        type: "consumable",
                        date: date,
                        expires: nil,
                        price: 990,
                        introductory: false
                    )
                )
                nextTransaction += 1
            }
            for purchase in purchases {
                let refunded = purchase.price > 0 && random.chance(1, in: 60)
                let share: Int64 = random.chance(1, in: 3) ? 50_000 : 100_000
                let refundDate =
                    refunded
                    ? min(now - 1000, purchase.date + Int64(random.next(below: UInt64(10 * Self.day)))) : nil
                batch.purchase(
                    purchase,
                    customerId: customerId,
                    environment: environment,
                    currency: currency,
                    refund: refundDate.map { ($0, share) },
                    random: &random
                )
                written.transactions += 1
                written.finance += (purchase.price > 0 ? 1 : 0) + (refunded ? 1 : 0)
            }
            if customer % 50 == 0, let last = purchases.last(where: { $0.type == "autoRenewable" }) {
                // A subscription's state as Apple's renewal info left it.
                batch.subscriptionState(last, environment: environment, now: now, renewing: last.expires ?? 0 > now)
            }
            try await flushIfFull()
        }
        // The queue: submissions Apple has not answered, and some that ran out of attempts.
        for index in 0..<min(300, max(10, shape.customers / 300)) {
            batch.waitingSubmission(
                index: index,
                customerId: String(format: "customer-%07d", index * 7 % max(1, shape.customers)),
                deadLettered: index % 3 != 0,
                now: now
            )
        }
        try await flushIfFull(force: true)
        written.events = batch.events
        written.submissions = batch.submissions
        written.notifications = batch.notifications
        progress("building the figures and the balances")
        try await server.figures.rebuild()
        try await server.ledger.rebuildBalances()
        written.seconds = Double((clock.now - start).components.seconds)
        return written
    }

    /// The demo app and its catalogue, without an Apple key or a shared secret (nothing to confirm with).
    static func prepareApp(_ server: PurchaseServer) async throws {
        _ = try await server.catalogue.createApp(
            ServerAppInput(bundleId: bundleId, name: "Till Demo (generated)", acceptSandbox: true)
        )
        // The products it sells, from development mode's demo catalogue.
        let sold: Set = ["gems.100", "pro", "premium.monthly", "premium.yearly"]
        let products = DevelopmentSetup.catalogue.filter { sold.contains($0.0) }
        for (id, input) in products { try await server.catalogue.putProduct(bundleId: bundleId, productId: id, input) }
    }
}

/// One purchase the generator makes: a period of a subscription, gems, Pro.
struct Purchase {
    var id: Int64
    var original: Int64
    var product: String
    var type: String
    var date: Int64
    var expires: Int64?
    var price: Int64
    var introductory: Bool
}

/// A fast, seeded generator (SplitMix64): the same shape makes the same ledger.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: UInt64) -> UInt64 { bound == 0 ? 0 : next() % bound }

    mutating func chance(_ numerator: UInt64, in denominator: UInt64) -> Bool { next(below: denominator) < numerator }

    mutating func uuid() -> String {
        let a = next()
        let b = next()
        let hex = String(format: "%016llx%016llx", a, b)
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}
