import Foundation
import TillClient
import TillContract

/// What a `till shop` command shows: JSON with `--json`, otherwise ``text``.
protocol ShopView: Encodable {
    /// The answer for a person.
    var text: String { get }
}

/// The products offered, with the store's localized prices.
struct ShopProducts: ShopView {
    struct Product: Encodable {
        var productId: String
        var type: String
        var title: String
        var description: String
        var displayPrice: String
        /// Milliunits of `currency` (990 = 9.99).
        var price: Int64
        var currency: String
        var credits: [String: Int64]
        var entitlements: [String]
        var files: [ShopFile]
        /// Whether the customer's verified snapshot shows a purchase of it.
        var owned: Bool
    }

    var products: [Product]
    /// Products of the server's master list the store does not sell.
    var invalidProductIds: [String]

    var text: String {
        var lines = products.enumerated().map { index, product in
            var grants = product.credits.map { "+\($0.value) \($0.key)" }.sorted()
            grants += product.entitlements.map { "→ \($0)" }
            if !product.files.isEmpty { grants.append("+ \(product.files.count) file(s)") }
            return String(format: "%2d  ", index + 1) + TextFormat.column(product.productId, 17)
                + TextFormat.column(product.title, 24) + TextFormat.column(product.displayPrice, 8)
                + TextFormat.column(product.type, 17) + grants.joined(separator: " ")
                + (product.owned ? "  (owned)" : "")
        }
        if !invalidProductIds.isEmpty {
            lines.append("not sold by the store: " + invalidProductIds.joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }
}

/// A file of a product, as listed or as stored on this device.
struct ShopFile: Encodable {
    var name: String
    var size: Int64
    var sha256: String
    /// Where it is stored on this device, once downloaded.
    var path: String?
    /// Bytes downloaded by this command (0 when it was stored already).
    var transferred: Int64?
    /// Where a resumed download started.
    var resumedFrom: Int64?

    init(_ file: CatalogueFile) {
        name = file.name
        size = file.size
        sha256 = file.sha256
    }

    init(_ file: StoredFile) {
        name = file.name
        size = file.size
        sha256 = file.sha256
        path = file.url.path
        transferred = file.transferred
        resumedFrom = file.resumedFrom
    }

    var line: String {
        var text = "\(name) (\(TextFormat.megabytes(size)))"
        if let path { text += ": " + path }
        if let resumedFrom, resumedFrom > 0 { text += ", resumed from byte \(resumedFrom)" }
        if transferred == 0 { text += ", already on this device" }
        return text
    }
}

/// An error the server or the store gave, as shown.
struct ShopError: Encodable {
    var kind: String
    var status: Int?
    var code: String?
    var message: String

    init(_ error: TillClientError) {
        kind = error.kind.description
        status = error.status
        code = error.code
        message = error.message
    }

    /// StoreKit 1's number for the store's code (as the simulator reports it), else the code's name.
    init(store error: StoreError) {
        kind = "store"
        code = error.code.skErrorCode.map(String.init) ?? error.code.description
        message = error.message
    }

    init(kind: String, code: String?, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }
}

/// What became of `buy`.
struct ShopPurchase: ShopView {
    /// `delivered`, `cancelled`, `pending`, `failed` (the store refused), `unverified` (the store's signature did not
    /// verify on the device) or `notDelivered` (charged, delivered later).
    var outcome: String
    var productId: String
    var transactionId: String?
    var submissionId: String?
    var submissionState: String?
    var files: [ShopFile] = []
    var balances: [String: Int64]?
    var entitlements: [String]?
    var error: ShopError?
    /// For `notDelivered`: whether the submission waits in the outbox.
    var queuedInOutbox: Bool?
    /// For Ask to Buy: the payment a parent approves (`POST /admin/v1/payments/{id}/approve` on the simulator).
    var paymentId: String?
    /// Where to approve it.
    var approveURL: String?

    var text: String {
        switch outcome {
        case "delivered":
            var lines = ["✓ \(productId) delivered (transaction \(transactionId ?? "?"), \(submissionState ?? "?"))"]
            if let entitlements, !entitlements.isEmpty {
                lines.append("  entitlements: " + entitlements.joined(separator: ", "))
            }
            if let balances, !balances.isEmpty { lines.append("  balance: " + ShopBalance.describe(balances)) }
            lines += files.map { "  file: " + $0.line }
            return lines.joined(separator: "\n")
        case "cancelled":
            return "Cancelled: nothing was charged."
        case "pending":
            var text = "Waiting for approval (Ask to Buy): \(productId) is delivered once a parent approves it."
            if let approveURL { text += "\n  approve: curl -s -X POST \(approveURL)" }
            return text
        case "failed":
            return "✗ The App Store refused the payment (\(error?.message ?? "?")): nothing was charged."
        case "unverified":
            return "✗ The store's signature did not verify on this device (\(error?.message ?? "?")): not delivered."
        default:
            return "✗ Charged, not delivered yet: \(error?.message ?? "?")"
                + (queuedInOutbox == true
                    ? "\n  It waits in the outbox and is sent again at the next launch (any till shop command)."
                    : "\n  The transaction stays unfinished and is delivered at the next launch.")
        }
    }
}

/// Credits left.
struct ShopBalance: ShopView {
    var customerId: String
    var balances: [String: Int64]

    var text: String { balances.isEmpty ? "no credits" : Self.describe(balances) }

    static func describe(_ balances: [String: Int64]) -> String {
        balances.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }
}

/// The verified snapshot: entitlements and purchases.
struct ShopEntitlements: ShopView {
    struct Entitlement: Encodable {
        var id: String
        var productId: String
        var expiresDate: Int64?
        var provisional: Bool
        /// Granted now (an expiring one until its end).
        var active: Bool
    }

    struct Purchase: Encodable {
        var productId: String
        var transactionId: String
        var quantity: Int
        var confirmed: Bool
        var revoked: Bool
    }

    var customerId: String
    /// When the server signed the snapshot (UNIX milliseconds).
    var issuedAt: Int64
    var entitlements: [Entitlement]
    var balances: [String: Int64]
    var purchases: [Purchase]

    var text: String {
        var lines = entitlements.isEmpty ? ["no entitlements"] : []
        for entitlement in entitlements {
            var line = (entitlement.active ? "✓ " : "  ") + entitlement.id + " (from \(entitlement.productId))"
            if let end = entitlement.expiresDate {
                let date = Date(timeIntervalSince1970: Double(end) / 1000)
                line +=
                    (entitlement.active ? ", until " : ", ended ") + date.formatted(date: .abbreviated, time: .standard)
            }
            if entitlement.provisional { line += ", provisional (Apple has not confirmed it yet)" }
            lines.append(line)
        }
        if !balances.isEmpty { lines.append("balance: " + ShopBalance.describe(balances)) }
        lines.append("\(purchases.count) purchases:")
        for purchase in purchases {
            var line = "  \(purchase.productId) \(purchase.transactionId)"
            if purchase.quantity > 1 { line += " ×\(purchase.quantity)" }
            line += purchase.revoked ? " refunded" : purchase.confirmed ? " confirmed" : " provisional"
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// What `restore` brought back.
struct ShopRestore: ShopView {
    struct Restored: Encodable {
        var productId: String
        var transactionId: String?
        var originalTransactionId: String?
        var files: [ShopFile]
    }

    /// `completed`, `nothingToRestore` or `failed`.
    var outcome: String
    var restored: [Restored]
    var error: ShopError?

    var text: String {
        switch outcome {
        case "completed":
            var lines = ["✓ Restored \(restored.count) purchase(s):"]
            for item in restored {
                lines.append("  \(item.productId) (original \(item.originalTransactionId ?? "?"))")
                lines += item.files.map { "    file: " + $0.line }
            }
            return lines.joined(separator: "\n")
        case "nothingToRestore":
            return "Nothing to restore: this App Store account has no restorable purchases of the app."
        default:
            return "✗ The restore failed: \(error?.message ?? "?")"
                + (restored.isEmpty ? "" : " (\(restored.count) delivered anyway)")
        }
    }
}

/// The files of a product on this device.
struct ShopDownload: ShopView {
    var productId: String
    var files: [ShopFile]
    /// The first lines of text files, to open them in the terminal.
    var preview: [String: String]?

    var text: String {
        guard !files.isEmpty else { return "\(productId) has no files." }
        var lines = files.map { "✓ " + $0.line }
        for (name, text) in (preview ?? [:]).sorted(by: { $0.key < $1.key }) {
            lines.append("--- \(name)")
            lines.append(text)
        }
        return lines.joined(separator: "\n")
    }
}

/// The outbox: submissions waiting for the server, and those it refused for good.
struct ShopOutbox: ShopView {
    struct Entry: Encodable {
        var idempotencyKey: String
        var customerId: String
        var productId: String?
        var transactionId: String?
        var evidence: String
        var createdAt: Int64
        var attempts: Int
        var nextAttemptAt: Int64
        var lastError: String?
        var status: Int?
        var code: String?
        var message: String?

        init(_ entry: OutboxEntry) {
            idempotencyKey = entry.idempotencyKey
            customerId = entry.customerId
            productId = entry.productId
            transactionId = entry.transactionId
            evidence = entry.evidence.field
            createdAt = entry.createdAt
            attempts = entry.attempts
            nextAttemptAt = entry.nextAttemptAt
            lastError = entry.lastError
        }

        init(_ rejected: RejectedSubmission) {
            self.init(rejected.entry)
            status = rejected.status
            code = rejected.code
            message = rejected.message
        }
    }

    var pending: [Entry]
    var rejected: [Entry]

    var text: String {
        var lines: [String] = []
        lines.append(pending.isEmpty ? "Nothing waiting to be sent." : "\(pending.count) waiting to be sent:")
        for entry in pending {
            lines.append(
                "  \(entry.productId ?? "?") (transaction \(entry.transactionId ?? "?")), \(entry.attempts) attempts, "
                    + "last: \(entry.lastError ?? "not sent yet")"
            )
        }
        if !rejected.isEmpty {
            lines.append("\(rejected.count) refused by the server for good:")
            for entry in rejected {
                lines.append("  \(entry.productId ?? "?"): \(entry.code ?? "?") — \(entry.message ?? "")")
            }
        }
        return lines.joined(separator: "\n")
    }
}
