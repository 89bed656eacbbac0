import Crypto
import Foundation
import TillAppStore
import TillCatalogue
import TillContent
import TillCore
import TillJobs
import TillLedger
import TillStorage
import TillWebhooks
import X509

/// What a verification server is made of.
public struct ServerConfiguration: Sendable {
    public var database: DatabaseConfiguration
    /// How long an operation waits for failing storage to come back before `StorageUnavailable` (a 503).
    public var databaseWait: Duration = .seconds(5)
    /// The bearer token of the admin API.
    public var operatorToken: String
    public var apple: AppleEndpoints
    /// Extra roots trusted for sandbox data only (the simulator's); production trusts Apple's roots alone.
    public var sandboxJWSRoots: [Certificate]
    public var sandboxReceiptRoots: [Certificate]
    public var sandboxReceiptIntermediates: [Certificate]
    public var confirmation: ConfirmationSettings
    public var catchUp: CatchUpSettings
    /// How imports of existing customers ask Apple.
    public var imports: ImportSettings = .init()
    public var webhooks: WebhookSettings = .init()
    /// Signs download URLs; empty means "made once and kept in the database", so that URLs survive restarts and
    /// every process sharing one database agrees.
    public var serverSecret: [UInt8]
    /// Where uploaded content files are kept.
    public var contentDirectory: String
    public var content: ContentSettings
    /// Signs entitlement snapshots (ES256); nil means "made once and kept in the database", like `serverSecret`,
    /// so that snapshots apps keep on disk verify after restarts and whichever process signed them.
    public var snapshotSigningKey: P256.Signing.PrivateKey?
    /// Keys published in `GET /v1/keys` after the signing key, which do not sign: the next key before a rotation
    /// (so apps know it before the first snapshot it signs), the previous one after it (so the snapshots on
    /// devices keep verifying until they are replaced).
    public var snapshotPublishedKeys: [P256.Signing.PublicKey] = []
    /// Where the server's spans go (docs/tracing.md); nil: tracing is off, and no span is exported or kept.
    public var tracing: TracingSettings? = nil

    public init(
        database: DatabaseConfiguration = .sqliteInMemory,
        operatorToken: String,
        apple: AppleEndpoints = .apple,
        sandboxJWSRoots: [Certificate] = [],
        sandboxReceiptRoots: [Certificate] = [],
        sandboxReceiptIntermediates: [Certificate] = [],
        confirmation: ConfirmationSettings = .init(),
        catchUp: CatchUpSettings = .init(),
        serverSecret: [UInt8] = [],
        contentDirectory: String = FileManager.default.temporaryDirectory.appendingPathComponent("till-content").path,
        content: ContentSettings = .init(),
        snapshotSigningKey: P256.Signing.PrivateKey? = nil,
        webhooks: WebhookSettings = .init()
    ) {
        self.database = database
        self.operatorToken = operatorToken
        self.apple = apple
        self.sandboxJWSRoots = sandboxJWSRoots
        self.sandboxReceiptRoots = sandboxReceiptRoots
        self.sandboxReceiptIntermediates = sandboxReceiptIntermediates
        self.confirmation = confirmation
        self.catchUp = catchUp
        self.serverSecret = serverSecret
        self.contentDirectory = contentDirectory
        self.content = content
        self.snapshotSigningKey = snapshotSigningKey
        self.webhooks = webhooks
    }
}

extension ServerConfiguration {
    /// Trusts `certificates` for sandbox data only, as `apple.sandbox-roots` gives them: the self-signed ones are
    /// roots (of JWS and of receipts), the others intermediates that complete the chains of receipts, whose
    /// iOS 6-style form carries only its leaf. An intermediate vouches for nothing by itself: a chain through it
    /// must still end at one of the roots.
    public mutating func trustForSandbox(_ certificates: [Certificate]) {
        for certificate in certificates {
            if certificate.subject == certificate.issuer {
                if !sandboxJWSRoots.contains(certificate) { sandboxJWSRoots.append(certificate) }
                if !sandboxReceiptRoots.contains(certificate) { sandboxReceiptRoots.append(certificate) }
            } else if !sandboxReceiptIntermediates.contains(certificate) {
                sandboxReceiptIntermediates.append(certificate)
            }
        }
    }
}

extension ServerConfiguration {
    /// What Apple's side of the server (intake, confirmation, notifications, catch-up, consumption answers and imports)
    /// reads of these settings.
    package var appStore: AppStoreSettings {
        AppStoreSettings(
            apple: apple,
            sandboxJWSRoots: sandboxJWSRoots,
            sandboxReceiptRoots: sandboxReceiptRoots,
            sandboxReceiptIntermediates: sandboxReceiptIntermediates,
            confirmation: confirmation,
            catchUp: catchUp,
            imports: imports
        )
    }
}
