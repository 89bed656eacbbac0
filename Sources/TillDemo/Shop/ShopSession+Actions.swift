import Foundation
import TillClient
import TillContract
import TillCore

/// What each `till shop` command does, for the subcommands and the interactive menu alike.
extension ShopSession {
    /// How the customer answers the payment sheet.
    enum Choice: String, Sendable, CaseIterable {
        case confirm
        /// The customer cancels the sheet.
        case cancel
        /// The card is declined (the tester's account fails payments for this purchase).
        case decline
        /// Ask to Buy: the payment waits for a parent (the tester's account asks for this purchase).
        case askToBuy
    }

    /// The app's launch: what an app does before anything else. Answers lines worth telling the customer.
    func launch() async -> [String] {
        let report = await app.start()
        var lines: [String] = []
        if case .rejected(let error) = report.storedSnapshot {
            lines.append("the stored snapshot was rejected (\(error)) and fetched again")
        }
        let sent = report.resent.filter {
            if case .acknowledged = $0 { return true }
            return false
        }
        if !sent.isEmpty { lines.append("the outbox sent \(sent.count) waiting submission(s)") }
        for outcome in report.transactions {
            switch outcome {
            case .delivered(let delivery):
                lines.append("delivered at launch: \(delivery.transaction.productId)")
            case .notDelivered(let failure):
                lines.append("still not delivered: \(failure.transaction.productId) (\(failure.error.message))")
            case .failed(let productId, let error):
                lines.append("\(productId) was declined: \(error.message)")
            case .unverified(let transaction, let error):
                lines.append("\(transaction.productId) did not verify on the device: \(error)")
            case .userCancelled, .pending:
                break
            }
        }
        switch report.appTransaction {
        case .sent(let kept):
            lines.append(
                "the AppTransaction was sent to the server once (app transaction \(kept.appTransactionId ?? "?"))"
            )
        case .refused(let error):
            lines.append("the server refused the AppTransaction: \(error.code ?? "") \(error.message)")
        case .willRetry(let error):
            lines.append("the AppTransaction was not sent (\(error.message)): it is sent at the next launch")
        case .storeFailed(let error):
            lines.append("the store did not give the AppTransaction (\(error)): it is sent at the next launch")
        case .unverified(let error):
            lines.append("the AppTransaction did not verify on the device: \(error)")
        case .alreadySent, .unavailable:
            break
        }
        return lines
    }

    func products() async throws -> ShopProducts {
        let offered = try await app.offeredProducts()
        let snapshot = await app.entitlements.snapshot
        return ShopProducts(
            products: offered.products.map { product in
                ShopProducts.Product(
                    productId: product.productId,
                    type: product.catalogue._type.rawValue,
                    title: product.store.displayName,
                    description: product.store.description,
                    displayPrice: product.store.displayPrice,
                    price: product.store.priceInMilliunits,
                    currency: product.store.currencyCode,
                    credits: product.catalogue.credits.additionalProperties,
                    entitlements: product.catalogue.entitlements,
                    files: product.catalogue.content.map(ShopFile.init),
                    owned: product.catalogue.productType != .consumable
                        && snapshot?.owns(productId: product.productId) == true
                )
            },
            invalidProductIds: offered.invalidProductIds
        )
    }

    /// Buys a product and delivers it, showing the download of its files on `progress`.
    func buy(
        _ productId: String,
        quantity: Int = 1,
        choice: Choice = .confirm,
        progress: ProgressBar? = nil
    ) async throws -> ShopPurchase {
        await app.observeDownloads(Self.reporting(to: progress))
        let outcome: PurchaseOutcome
        switch choice {
        case .confirm:
            outcome = try await app.purchase(productId: productId, quantity: quantity)
        case .cancel:
            sheet.set(.cancel)
            outcome = try await app.purchase(productId: productId, quantity: quantity)
        case .decline:
            outcome = try await withAccount(["paymentFailure": .int(0)], restoring: ["paymentFailure": .int(-1)]) {
                try await app.purchase(productId: productId, quantity: quantity)
            }
        case .askToBuy:
            outcome = try await withAccount(["askToBuy": .bool(true)], restoring: ["askToBuy": .bool(false)]) {
                try await app.purchase(productId: productId, quantity: quantity)
            }
        }
        await app.observeDownloads(nil)
        progress?.finish()
        return await view(of: outcome)
    }

    func view(of outcome: PurchaseOutcome) async -> ShopPurchase {
        var view = ShopPurchase(
            outcome: "",
            productId: outcome.productId,
            transactionId: outcome.transaction?.transactionId
        )
        switch outcome {
        case .delivered(let delivery):
            view.outcome = "delivered"
            view.submissionId = delivery.submission?.id
            view.submissionState = delivery.submission?.state.rawValue
            view.files = delivery.files.map(ShopFile.init)
            view.balances = delivery.snapshot.snapshot.balances.additionalProperties
            view.entitlements = delivery.snapshot.snapshot.entitlements.filter { delivery.snapshot.grants($0.id) }
                .map(\.id)
        case .userCancelled:
            view.outcome = "cancelled"
        case .pending(let pending):
            view.outcome = "pending"
            view.paymentId = pending.paymentId
            view.approveURL = view.paymentId.map { "\(simulatorURL)/admin/v1/payments/\($0)/approve" }
        case .failed(_, let error):
            view.outcome = "failed"
            view.error = ShopError(store: error)
        case .unverified(_, let error):
            view.outcome = "unverified"
            view.error = ShopError(kind: "unverified", code: error.reason.rawValue, message: error.description)
        case .notDelivered(let failure):
            view.outcome = "notDelivered"
            view.error = ShopError(failure.error)
            view.queuedInOutbox = failure.queuedInOutbox
        }
        return view
    }

    func balance() async -> ShopBalance {
        ShopBalance(
            customerId: customerId,
            balances: await app.entitlements.snapshot?.snapshot.balances.additionalProperties ?? [:]
        )
    }

    func entitlements() async throws -> ShopEntitlements {
        guard let verified = await app.entitlements.snapshot else {
            throw TillClientError(.unreachable, message: "no verified snapshot: the server could not be reached")
        }
        let snapshot = verified.snapshot
        return ShopEntitlements(
            customerId: customerId,
            issuedAt: snapshot.issuedAt,
            entitlements: snapshot.entitlements.map {
                ShopEntitlements.Entitlement(
                    id: $0.id,
                    productId: $0.productId,
                    expiresDate: $0.expiresDate,
                    provisional: $0.provisional,
                    active: verified.grants($0.id)
                )
            },
            balances: snapshot.balances.additionalProperties,
            purchases: snapshot.purchases.map {
                ShopEntitlements.Purchase(
                    productId: $0.productId,
                    transactionId: $0.transactionId,
                    quantity: $0.quantity,
                    confirmed: $0.confirmed,
                    revoked: $0.revoked
                )
            }
        )
    }

    /// Spends credits on the server, once per `requestId`.
    func spend(_ amount: Int64, of credit: String, requestId: String) async throws -> ShopBalance {
        let snapshot = try await app.spend(amount, of: credit, requestId: requestId)
        return ShopBalance(customerId: customerId, balances: snapshot.snapshot.balances.additionalProperties)
    }

    func restore(progress: ProgressBar? = nil) async -> ShopRestore {
        await app.observeDownloads(Self.reporting(to: progress))
        let outcome = await app.restore()
        await app.observeDownloads(nil)
        progress?.finish()
        func restored(_ deliveries: [Delivery]) -> [ShopRestore.Restored] {
            deliveries.map {
                ShopRestore.Restored(
                    productId: $0.transaction.productId,
                    transactionId: $0.transaction.transactionId,
                    originalTransactionId: $0.transaction.originalTransactionId,
                    files: $0.files.map(ShopFile.init)
                )
            }
        }
        switch outcome {
        case .completed(let deliveries):
            return ShopRestore(outcome: "completed", restored: restored(deliveries))
        case .nothingToRestore:
            return ShopRestore(outcome: "nothingToRestore", restored: [])
        case .failed(let failure):
            let error =
                failure.error.map(ShopError.init) ?? failure.storeError.map { ShopError(store: $0) }
            return ShopRestore(outcome: "failed", restored: restored(failure.delivered), error: error)
        }
    }

    /// Downloads a product's files to this device (again, with `again`), showing `progress`.
    func download(_ productId: String, again: Bool = false, progress: ProgressBar? = nil) async throws
        -> ShopDownload
    {
        if again { try await app.content.remove(productId: productId) }
        let files = try await app.downloadContent(productId: productId) { progress?.update($0) }
        progress?.finish()
        var preview: [String: String] = [:]
        for file in files {
            guard let handle = try? FileHandle(forReadingFrom: file.url) else { continue }
            defer { try? handle.close() }
            let head = (try? handle.read(upToCount: 400)) ?? Data()
            // Text opens in the terminal; anything else is left to an app that knows its format.
            if let text = String(data: head, encoding: .utf8), !text.contains("\u{0}") {
                preview[file.name] = text.split(separator: "\n").prefix(3).joined(separator: "\n")
            }
        }
        return ShopDownload(productId: productId, files: files.map(ShopFile.init), preview: preview)
    }

    static func reporting(to bar: ProgressBar?) -> (@Sendable (DownloadProgress) -> Void)? {
        guard let bar else { return nil }
        return { bar.update($0) }
    }

    func outbox() async -> ShopOutbox {
        ShopOutbox(
            pending: await app.outbox.pending.map(ShopOutbox.Entry.init),
            rejected: await app.outbox.rejected.map(ShopOutbox.Entry.init)
        )
    }
}
