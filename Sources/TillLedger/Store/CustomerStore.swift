import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// The customers (`srv_customers`) and the aliases that link a guest to an account.
package struct CustomerStore: ServerSQLStore {
    package let database: TillDatabase

    // MARK: Customers

    /// Records a customer id unless it is recorded already; answers whether this call recorded it (false: it was there,
    /// perhaps recorded by a concurrent transaction).
    @discardableResult
    package func ensureCustomer(bundleId: String, customerId: String, at: Int64, on db: any SQLDatabase) async throws
        -> Bool
    {
        try await db.first(Self.insertCustomer(bundleId, customerId, at)) != nil
    }

    private static let insertCustomer = FixedStatement(
        """
        INSERT INTO srv_customers (bundle_id, customer_id, alias_of, created_at)
        VALUES (?1, ?2, NULL, ?3) ON CONFLICT (bundle_id, customer_id) DO NOTHING RETURNING customer_id
        """
    )

    /// Who a customer id turned out to be when `admit` took it.
    package struct Admission: Sendable {
        /// The account the id stands for (itself, or the account a guest id is linked to).
        package var owner: String
        /// When the server first recorded the account (`Account.firstSeen`).
        package var firstSeen: Int64?
        /// The id was recorded now, for the first time: no guest can be linked to it yet (linking records the
        /// account first), so its events need not read its guests.
        package var isNew: Bool
    }

    /// The account a customer id stands for, and when the server first recorded it.
    package struct Account: Sendable {
        /// The id itself, or the account a guest id is linked to.
        package var owner: String
        /// The account row's `created_at`: when its id was first recorded, moved back to a guest's when a guest
        /// recorded earlier is linked to it (`LedgerStore.setAlias`), so the earliest of the account's ids. Nil for an
        /// id that was never recorded.
        package var firstSeen: Int64?
    }

    /// The account a change under a customer id is written to, recording the id as a customer when it is new: one read
    /// for a known id (a purchase's usual case), where recording it every time and then resolving it took an insert
    /// and a read. The id is held until the change commits, as `owner(bundleId:customerId:on:)` holds it.
    package func admit(bundleId: String, customerId: String, at: Int64, on db: any SQLDatabase) async throws
        -> Admission
    {
        guard let row = try await db.first(Self.heldAlias(bundleId, customerId)) else {
            if try await ensureCustomer(bundleId: bundleId, customerId: customerId, at: at, on: db) {
                return Admission(owner: customerId, firstSeen: at, isNew: true)
            }
            // Recorded between the read and the insert by another transaction (PostgreSQL's read committed), perhaps
            // as a guest or with guests of its own: resolved as a known id is.
            let account = try await account(bundleId: bundleId, customerId: customerId, holding: true, on: db)
            return Admission(owner: account.owner, firstSeen: account.firstSeen, isNew: false)
        }
        let account = try await account(from: row, of: customerId, bundleId: bundleId, on: db)
        return Admission(owner: account.owner, firstSeen: account.firstSeen, isNew: false)
    }

    /// The account a customer id stands for (a guest linked to an account resolves to the account), for a read. A
    /// change written under the account takes `owner(bundleId:customerId:on:)`.
    package func resolve(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String {
        try await account(bundleId: bundleId, customerId: customerId, holding: false, on: db).owner
    }

    /// The account a change under `customerId` is written to (as `resolve` answers it), with the id held until the
    /// change's transaction ends: on PostgreSQL its row is read `FOR KEY SHARE`. A link of the id holds the row `FOR
    /// UPDATE` before it reads anything (`record(_:holding:)`), so the two run one after the other: the change first,
    /// and the link moves what it wrote; or the link first, and the change reads the link's row and is written to the
    /// account. Without it, on read committed, a change that read the id before a link committed wrote its rows
    /// under the guest after the link had moved the guest's, and the account never saw them. SQLite has one writer.
    package func owner(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String {
        try await account(bundleId: bundleId, customerId: customerId, holding: true, on: db).owner
    }

    /// The account a customer id stands for, and when it was first recorded: the same reads as `resolve`.
    package func account(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> Account {
        try await account(bundleId: bundleId, customerId: customerId, holding: false, on: db)
    }

    /// `holding`: the id's row is held until the transaction ends (`owner`). Only the first row is: a link of the
    /// account it leads to is refused while the account has guests, and a link of a guest takes the guest's row.
    private func account(bundleId: String, customerId: String, holding: Bool, on db: any SQLDatabase) async throws
        -> Account
    {
        guard let row = try await db.first((holding ? Self.heldAlias : Self.alias)(bundleId, customerId)) else {
            return Account(owner: customerId, firstSeen: nil)
        }
        return try await account(from: row, of: customerId, bundleId: bundleId, on: db)
    }

    /// Records the ids that are new, then holds every one's row until the transaction ends (PostgreSQL: `FOR UPDATE`,
    /// in the ids' order, as their rows are recorded in it): a link's first step. Two links that share an id run one
    /// after the other, and so do a link and a change under one of its ids (`owner`). In another order, two links
    /// crossing (X to Y and Y to X) each passed their checks before the other wrote and made a cycle of two guests,
    /// and two new ids recorded in opposite orders deadlocked. SQLite has one writer already.
    package func record(_ customerIds: [String], bundleId: String, at: Int64, holding db: any SQLDatabase)
        async throws
    {
        let ids = Array(Set(customerIds)).sorted()
        for id in ids {
            try await ensureCustomer(bundleId: bundleId, customerId: id, at: at, on: db)
        }
        guard database.engine == .postgres else { return }
        try await db.raw(
            """
            SELECT customer_id FROM srv_customers
            WHERE bundle_id = \(bind: bundleId) AND customer_id IN (\(binds: ids))
            ORDER BY customer_id FOR UPDATE
            """
        ).run()
    }

    /// The account that `customerId`, whose row (`alias`) is read, stands for: the row's own date when it is no one's
    /// guest, else the account's it links to (a guest of a guest, which linking refuses, followed 8 steps at most).
    private func account(from row: any SQLRow, of customerId: String, bundleId: String, on db: any SQLDatabase)
        async throws -> Account
    {
        var (row, current) = (row, customerId)
        for _ in 0..<8 {
            guard let alias = try row.decode(column: "alias_of", as: String?.self) else {
                return Account(owner: current, firstSeen: try row.decode(column: "created_at", as: Int64.self))
            }
            guard let next = try await db.first(Self.alias(bundleId, alias)) else {
                return Account(owner: alias, firstSeen: nil)
            }
            (row, current) = (next, alias)
        }
        return Account(owner: current, firstSeen: nil)
    }

    /// The account a guest id is linked to; nil for an id that is no one's guest.
    package func aliasOf(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.first(Self.alias(bundleId, customerId))?.decode(column: "alias_of", as: String?.self)
    }

    private static let alias = FixedStatement(
        "SELECT alias_of, created_at FROM srv_customers WHERE bundle_id = ?1 AND customer_id = ?2"
    )
    /// `FOR KEY SHARE`: the weakest lock that a link's `FOR UPDATE` waits for. Many changes of one customer hold it
    /// together, and none waits for another.
    private static let heldAlias = FixedStatement(
        sqlite: "SELECT alias_of, created_at FROM srv_customers WHERE bundle_id = ?1 AND customer_id = ?2",
        postgres:
            "SELECT alias_of, created_at FROM srv_customers WHERE bundle_id = ?1 AND customer_id = ?2 FOR KEY SHARE"
    )

    /// The guest ids linked to the account `customerId`, sorted.
    package func guests(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [String] {
        try await db.all(Self.guests(bundleId, customerId)).map {
            try $0.decode(column: "customer_id", as: String.self)
        }
    }

    private static let guests = FixedStatement(
        "SELECT customer_id FROM srv_customers WHERE bundle_id = ?1 AND alias_of = ?2 ORDER BY customer_id"
    )

    /// Whether any guest id is linked to `customerId` (which makes it an account).
    package func hasGuests(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            "SELECT customer_id FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND alias_of = \(bind: customerId) LIMIT 1"
        ).first() != nil
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }

    // MARK: Finding a customer

    /// Customer ids of an app that start with `prefix`, in order, at most `limit`, each with the account it is a guest
    /// of (the console's search).
    package func customers(bundleId: String, prefix: String, limit: Int, on db: any SQLDatabase) async throws
        -> [(customerId: String, aliasOf: String?)]
    {
        try await db.raw(
            """
            SELECT customer_id, alias_of FROM srv_customers
            WHERE bundle_id = \(bind: bundleId) AND customer_id >= \(bind: prefix)
              AND customer_id < \(bind: prefix + "\u{10FFFF}")
            ORDER BY customer_id LIMIT \(literal: limit)
            """
        ).all().map {
            (try $0.decode(column: "customer_id", as: String.self), try $0.decode(column: "alias_of", as: String?.self))
        }
    }
}
