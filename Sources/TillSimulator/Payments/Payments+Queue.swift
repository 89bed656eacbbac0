import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension Payments {
    /// The device's unfinished transactions: everything the app has not finished yet comes back every time.
    public func queue(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> [QueueTransaction]
    {
        try await faultsForStoreKit(environment)
        let ids = try await database.transaction { db -> [String] in
            let (device, _) = try await store.requireDevice(deviceId, environment: environment, on: db)
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            var ids: [String] = []
            for var entry in try await self.store.purchases.unfinishedQueue(
                deviceId: device.id,
                appAppleId: app.appAppleId,
                on: db
            ) {
                entry.deliveries += 1
                try await self.store.update(entry, on: db)
                ids.append(entry.id)
            }
            return ids
        }
        var result: [QueueTransaction] = []
        for id in ids { result.append(try await queueTransaction(entryId: id)) }
        return result
    }

    /// Finishes a queue entry. A finished consumable leaves the receipt; deferred entries cannot be finished.
    public func finish(entryId: String, deviceId: String, environment: AppStoreEnvironment) async throws {
        try await database.transaction { db in
            _ = try await store.requireDevice(deviceId, environment: environment, on: db)
            guard var entry = try await self.store.purchases.queueEntry(id: entryId, on: db), entry.deviceId == deviceId
            else {
                throw PaymentRefusal(.queueEntryNotFound, "no queueEntry \(entryId)")
            }
            guard entry.state != .deferred && entry.state != .purchasing else {
                throw PaymentRefusal(.notFinishable, "a \(entry.state.rawValue) transaction cannot be finished")
            }
            entry.finished = true
            try await self.store.update(entry, on: db)
            if entry.state == .purchased, let id = entry.transactionId,
                var tx = try await self.store.purchases.transaction(id: id, on: db),
                !tx.finished
            {
                // Finishing changes nothing Apple signs: the transaction keeps its place in history.
                tx.finished = true
                try await self.store.update(tx, on: db)
            }
        }
    }

    /// Restores completed transactions on a device: every restorable transaction of the account for the app,
    /// from any device, as `restored` entries. Consumables and non-renewing subscriptions are never restored.
    public func restore(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> RestoreResult
    {
        do {
            try await faultsForStoreKit(environment)
        } catch let error as PaymentRefusal where error.reason == .storeUnavailable {
            return RestoreResult(status: .failed, transactions: [], error: .init(code: 0, message: error.message))
        }
        let outcome = try await database.transaction { db -> Result<[String], PaymentRefusal> in
            guard let device = try await self.store.appStoreConnect.device(id: deviceId, on: db) else {
                throw PaymentRefusal(.deviceNotFound, "no device \(deviceId)")
            }
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            guard let account = try await self.store.appStoreConnect.account(id: device.accountId, on: db),
                account.environment == environment
            else {
                throw PaymentRefusal(
                    .wrongEnvironment,
                    "the device's account is not a \(environment) account"
                )
            }
            guard !account.deleted else {
                return .failure(PaymentRefusal(.accountDeleted, "the account was deleted"))
            }
            let transactions = try await self.store.purchases.transactions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            )
            var ids: [String] = []
            var restoredProducts: Set<String> = []
            for tx in transactions where tx.productType.isRestorable && tx.revocationDate == nil {
                // One restore per non-consumable product; every period of a subscription.
                if tx.productType != .autoRenewable {
                    guard restoredProducts.insert(tx.productId).inserted else { continue }
                }
                let seq = try await self.store.next("queue", on: db)
                let entry = SimQueueEntry(
                    id: UUID().uuidString.lowercased(),
                    deviceId: device.id,
                    appAppleId: app.appAppleId,
                    seq: seq,
                    state: .restored,
                    transactionId: tx.transactionId,
                    restoredTransactionId: try await store.nextTransactionId(environment, on: db),
                    paymentId: nil,
                    productId: tx.productId,
                    errorCode: nil,
                    errorMessage: nil,
                    finished: false,
                    deliveries: 0,
                    createdAt: self.clock.nowMilliseconds
                )
                try await self.store.insert(entry, on: db)
                ids.append(entry.id)
            }
            return .success(ids)
        }
        switch outcome {
        case .failure(let error):
            return RestoreResult(status: .failed, transactions: [], error: .init(code: 0, message: error.message))
        case .success(let ids):
            var restored: [QueueTransaction] = []
            for id in ids { restored.append(try await queueTransaction(entryId: id)) }
            return RestoreResult(status: .completed, transactions: restored, error: nil)
        }
    }
}
