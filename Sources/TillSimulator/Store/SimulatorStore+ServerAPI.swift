import Foundation
import SQLKit
import TillCore
import TillStorage

/// What the App Store Server API records: consumption information and renewal-date extensions.
extension SimulatorStore {
    // MARK: Consumption information

    func insert(_ info: SimConsumptionInfo, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_consumption").model(info, with: Self.encoding).run()
    }

    func consumptionInfo(appAppleId: Int64, environment: String, on db: any SQLDatabase) async throws
        -> [SimConsumptionInfo]
    {
        try await db.select().column("*").from("sim_consumption").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).orderBy("received_at").orderBy("id")
            .all(decoding: SimConsumptionInfo.self, with: Self.decoding)
    }

    // MARK: Renewal-date extensions

    func insert(_ extensionRecord: SimRenewalExtension, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_extensions").model(extensionRecord, with: Self.encoding).run()
    }

    /// The extension a request identifier already made for this subscription (requests are idempotent).
    func renewalExtension(
        requestIdentifier: String,
        originalTransactionId: String,
        appAppleId: Int64,
        environment: String,
        on db: any SQLDatabase
    ) async throws -> SimRenewalExtension? {
        try await db.select().column("*").from("sim_extensions").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("request_identifier", .equal, requestIdentifier)
            .where("original_transaction_id", .equal, originalTransactionId)
            .first(decoding: SimRenewalExtension.self, with: Self.decoding)
    }

    /// How many times a subscription's renewal date was extended since `since`.
    func succeededExtensions(originalTransactionId: String, since: Int64, on db: any SQLDatabase) async throws -> Int {
        try await db.raw(
            """
            SELECT COUNT(*) AS n FROM sim_extensions
            WHERE original_transaction_id = \(bind: originalTransactionId) AND succeeded
              AND created_at >= \(bind: since)
            """
        ).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func insert(_ request: SimMassExtension, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_mass_extensions").model(request, with: Self.encoding).run()
    }

    func update(_ request: SimMassExtension, on db: any SQLDatabase) async throws {
        try await db.update("sim_mass_extensions").set(model: request, with: Self.encoding)
            .where("app_apple_id", .equal, request.appAppleId).where("environment", .equal, request.environment)
            .where("request_identifier", .equal, request.requestIdentifier).run()
    }

    func massExtension(requestIdentifier: String, appAppleId: Int64, environment: String, on db: any SQLDatabase)
        async throws -> SimMassExtension?
    {
        try await db.select().column("*").from("sim_mass_extensions").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("request_identifier", .equal, requestIdentifier)
            .first(decoding: SimMassExtension.self, with: Self.decoding)
    }

    func incompleteMassExtensions(on db: any SQLDatabase) async throws -> [SimMassExtension] {
        try await db.select().column("*").from("sim_mass_extensions").where("complete", .equal, false)
            .orderBy("created_at").all(decoding: SimMassExtension.self, with: Self.decoding)
    }

    /// The active subscriptions of a product that a mass extension has not reached yet, at most `limit`.
    func subscriptionsToExtend(
        _ request: SimMassExtension,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [SimSubscription] {
        try await db.raw(
            """
            SELECT s.* FROM sim_subscriptions s
            WHERE s.app_apple_id = \(bind: request.appAppleId) AND s.environment = \(bind: request.environment)
              AND s.product_id = \(bind: request.productId) AND s.status IN (1, 3, 4)
              AND NOT EXISTS (
                SELECT 1 FROM sim_extensions e
                WHERE e.app_apple_id = s.app_apple_id AND e.environment = s.environment
                  AND e.request_identifier = \(bind: request.requestIdentifier)
                  AND e.original_transaction_id = s.original_transaction_id)
            ORDER BY s.original_transaction_id LIMIT \(literal: limit)
            """
        ).all(decoding: SimSubscription.self, with: Self.decoding)
    }
}

extension SimulatorStore {
    /// Marks every queue entry of a transaction finished (Finish Transaction, from the server).
    func finishQueueEntries(transactionId: String, on db: any SQLDatabase) async throws {
        try await db.update("sim_queue").set("finished", to: true).where("transaction_id", .equal, transactionId)
            .where("restored_transaction_id", .is, SQLLiteral.null).run()
    }

    /// The newest notification of a type about a transaction.
    func latestNotification(type: String, transactionId: String, on db: any SQLDatabase) async throws
        -> SimNotificationRecord?
    {
        try await db.select().column("*").from("sim_notifications").where("notification_type", .equal, type)
            .where("transaction_id", .equal, transactionId).orderBy("created_at", .descending).limit(1)
            .first(decoding: SimNotificationRecord.self, with: Self.decoding)
    }
}

extension SimulatorStore {
    /// The accounts that have a transaction of an app in an environment.
    func customers(appAppleId: Int64, environment: String, on db: any SQLDatabase) async throws -> [String] {
        try await db.raw(
            """
            SELECT DISTINCT account_id FROM sim_transactions
            WHERE app_apple_id = \(bind: appAppleId) AND environment = \(bind: environment)
            ORDER BY account_id
            """
        ).all().map { try $0.decode(column: "account_id", as: String.self) }
    }
}
