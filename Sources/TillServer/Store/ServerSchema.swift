import TillAppStore
import TillCatalogue
import TillJobs
import TillLedger
import TillStorage

/// The verification server's tables. Times are BIGINT milliseconds since 1970; JSON documents are TEXT.
enum ServerSchema {
    /// Brings `database` to this build's schema (refusing one a newer build wrote).
    static func migrate(_ database: TillDatabase) async throws {
        try await database.migrate(migrations, schema: name)
    }

    static let name = "server"

    // The values each enum column may hold, as its CHECK constraint lists them. A migration keeps the list it was
    // written with; `ServerStorageTests.everyEnumColumnChecksItsSwiftCases` fails when a Swift enum gains a case that
    // no migration added to its column.
    static let environments = "'Production', 'Sandbox', 'Xcode', 'LocalTesting'"
    static let productTypes = "'consumable', 'nonConsumable', 'autoRenewable', 'nonRenewing', 'freeSubscription'"
    static let ownerships = "'PURCHASED', 'FAMILY_SHARED'"
    static let revocationReasons = "'refund', 'upgraded', 'familyRevoked', 'rejected', 'operator'"
    static let ledgerSources = "'submission', 'notification', 'transactionHistory', 'operator'"
    static let financeKinds = "'purchase', 'refund', 'refundReversed', 'revocation', 'restoration'"
    static let submissionStates = "'pending', 'confirmed', 'retrying', 'rejected', 'deadLettered'"
    static let submissionKinds = "'appReceipt', 'transactionReceipt', 'signedTransaction'"
    static let retryCauses = "'appleUnavailable', 'configuration', 'other'"
    static let jobKinds = "'confirmation', 'consumptionAnswer', 'catchUp', 'delivery', 'import'"
    /// The job kinds as migrations 018 and 024 wrote them (026 adds `import`).
    private static let jobKinds018 = "'confirmation', 'consumptionAnswer', 'catchUp', 'delivery'"
    static let jobStates = "'queued', 'deadLettered'"
    static let eventTypes = """
        'purchase.initial', 'subscription.renewed', 'purchase.nonRenewing', 'credits.purchased', 'credits.debited',
        'credits.adjusted', 'subscription.autoRenewOff', 'subscription.autoRenewOn', 'subscription.billingIssue',
        'subscription.billingRecovered', 'subscription.expired', 'subscription.productChanged', 'subscription.extended',
        'subscription.priceIncrease', 'subscription.priceIncreaseConsented', 'purchase.refunded',
        'purchase.refundReversed', 'purchase.confirmed', 'purchase.rejected', 'access.granted', 'access.revoked',
        'customer.transferred', 'consumption.answerSent'
        """
    static let eventSources =
        "'submission', 'confirmation', 'notification', 'catchUp', 'app', 'operator', 'consumption', 'import'"
    /// The event sources as migration 019 wrote them (026 adds `import`).
    private static let eventSources019 =
        "'submission', 'confirmation', 'notification', 'catchUp', 'app', 'operator', 'consumption'"
    static let importStates = "'receiving', 'running', 'finished', 'cancelled'"
    static let importRowKinds = "'transactionId', 'appReceipt', 'signedTransaction'"
    static let importRowOutcomes = "'pending', 'imported', 'alreadyKnown', 'refused', 'failed'"
    static let importRowReasons = """
        'invalidRow', 'invalidCustomerId', 'unverifiable', 'sandboxNotAccepted', 'invalidTransactionId', 'notFound',
        'noTransactions', 'ownedByAnotherCustomer', 'appleRefused', 'appleUnavailable'
        """
    static let deliveryStates = "'pending', 'delivered', 'deadLettered'"
    static let figureMeasures =
        "'purchase', 'refund', 'refundReversed', 'revocation', 'restoration', 'renewal', 'subscription'"
    static let activityKinds = "'promotionalOfferSigned', 'introductoryEligibilitySigned', 'downloadsIssued'"
    static let consoleActions = consoleActions020 + ", 'cancelImport'"
    /// The console's actions as migration 020 wrote them (027 adds `cancelImport`).
    private static let consoleActions020 = """
        'signIn', 'signInRefused', 'signOut', 'grant', 'revoke', 'adjustBalance', 'retrySubmission',
        'retryAllSubmissions', 'saveProduct', 'uploadContent', 'deleteContent', 'createApp', 'updateApp',
        'rotateSharedSecret', 'removeSharedSecret', 'setAPIKey', 'setInAppPurchaseKey', 'addCertificate',
        'removeCertificate', 'putOffer', 'deleteOffer', 'catchUp'
        """

    /// The ledger's columns since migration 017, in order (SQLite rebuilds copy them by name).
    private static let ledgerColumns = """
        environment, transaction_id, bundle_id, customer_id, original_transaction_id, product_id, product_type, quantity,
        purchase_date, expires_date, revocation_date, revocation_reason, revocation_detail, is_upgraded, ownership, price,
        currency, storefront, web_order_line_item_id, submission_id, source, confirmed, created_at, updated_at,
        introductory_offer, billing_plan_type, commitment_period, commitment_periods, commitment_expires_date
        """

    /// What migration 017 makes of an old row: a rejection's `apple: status 21010` becomes `rejected` with its
    /// detail, and the origin hidden in `submission_id` becomes `source`.
    private static let typedLedgerSelect = """
        SELECT environment, transaction_id, bundle_id, customer_id, original_transaction_id, product_id, product_type,
            quantity, purchase_date, expires_date, revocation_date,
            CASE WHEN revocation_reason LIKE 'apple: %' THEN 'rejected' ELSE revocation_reason END,
            CASE WHEN revocation_reason LIKE 'apple: %' THEN substr(revocation_reason, 8) END,
            is_upgraded, ownership, price, currency, storefront, web_order_line_item_id, submission_id,
            CASE WHEN submission_id LIKE 'notification:%' THEN 'notification'
                 WHEN submission_id = 'transactionHistory' THEN 'transactionHistory' ELSE 'submission' END,
            confirmed, created_at, updated_at, introductory_offer, billing_plan_type, commitment_period,
            commitment_periods, commitment_expires_date
        FROM srv_transactions
        """

    private static let submissionColumns = """
        id, bundle_id, customer_id, idempotency_key, kind, environment, state, attempts, last_status, last_error, reason,
        transaction_ids, created_at, updated_at, confirmed_at, retry_cause
        """

    /// The jobs of the work queued before migration 018, which each table claimed for itself.
    private static let queuedWork = [
        """
        INSERT INTO srv_jobs (kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until,
            last_error, created_at, updated_at)
        SELECT 'confirmation', id, CASE WHEN state = 'deadLettered' THEN 'deadLettered' ELSE 'queued' END, '', NULL, 0,
            attempts, COALESCE(next_attempt_at, updated_at), NULL, last_error, created_at, updated_at
        FROM srv_submissions WHERE state IN ('pending', 'retrying', 'deadLettered')
        """,
        """
        INSERT INTO srv_jobs (kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until,
            last_error, created_at, updated_at)
        SELECT 'consumptionAnswer', notification_uuid, 'queued', '', NULL, 0, attempts,
            COALESCE(next_attempt_at, updated_at), NULL, detail, created_at, updated_at
        FROM srv_consumption_requests WHERE state IN ('pending', 'retrying')
        """,
    ]

    private static let jobsTable = """
        CREATE TABLE srv_jobs (
            kind TEXT NOT NULL CHECK (kind IN (\(jobKinds018))), job_key TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN (\(jobStates))), queue_group TEXT NOT NULL, stream TEXT,
            position BIGINT NOT NULL, attempts INTEGER NOT NULL, due_at BIGINT NOT NULL, claimed_until BIGINT,
            last_error TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (kind, job_key))
        """
    private static let jobIndexes = [
        // Claims take a group's due jobs in the order of their time, then of their place in their stream (a
        // backlog goes out oldest first, so the first jobs a claim reads are the first of their streams).
        "CREATE INDEX srv_jobs_due ON srv_jobs (kind, queue_group, state, due_at, position)",
        "CREATE INDEX srv_jobs_stream ON srv_jobs (kind, stream, position) WHERE stream IS NOT NULL",
        // When a kind's next job is due (a worker's longest wait).
        "CREATE INDEX srv_jobs_next ON srv_jobs (kind, state, due_at)",
    ]

    /// SQLite statements that rebuild `table` as a WITHOUT ROWID table with `columns` (its columns, in the same
    /// order, and its primary key), its rows, and its `indexes`.
    private static func clusteredByKey(_ table: String, _ columns: String, indexes: [String]) -> [String] {
        [
            "CREATE TABLE \(table)_by_key (\(columns)) WITHOUT ROWID",
            "INSERT INTO \(table)_by_key SELECT * FROM \(table)",
            "DROP TABLE \(table)",
            "ALTER TABLE \(table)_by_key RENAME TO \(table)",
        ] + indexes
    }

    /// The console's tables (migration 020), but the figures' journal, whose key each engine numbers its own way.
    private static let consoleTables = [
        """
        CREATE TABLE srv_figures_subscriptions (
            environment TEXT NOT NULL CHECK (environment IN (\(environments))), original_transaction_id TEXT NOT NULL,
            bundle_id TEXT NOT NULL, product_id TEXT NOT NULL, started_at BIGINT NOT NULL, ends_at BIGINT NOT NULL,
            trial BOOLEAN NOT NULL, trial_ends_at BIGINT, converted_at BIGINT, monthly_amount BIGINT NOT NULL,
            currency TEXT, periods INTEGER NOT NULL, updated_at BIGINT NOT NULL,
            PRIMARY KEY (environment, original_transaction_id))
        """,
        """
        CREATE INDEX srv_figures_subscriptions_ends
        ON srv_figures_subscriptions (bundle_id, environment, ends_at, started_at, currency, monthly_amount)
        """,
        "CREATE INDEX srv_figures_subscriptions_starts ON srv_figures_subscriptions (bundle_id, environment, started_at, trial)",
        """
        CREATE INDEX srv_figures_subscriptions_trials
        ON srv_figures_subscriptions (bundle_id, environment, trial_ends_at, converted_at) WHERE trial
        """,
        // Each confirmation attempt with Apple's answer (a submission keeps only its last).
        """
        CREATE TABLE srv_submission_attempts (
            submission_id TEXT NOT NULL, number INTEGER NOT NULL, at BIGINT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN (\(environments))),
            outcome TEXT NOT NULL CHECK (outcome IN (\(submissionStates))), status TEXT, error TEXT,
            retry_cause TEXT CHECK (retry_cause IN (\(retryCauses))), duration BIGINT,
            PRIMARY KEY (submission_id, number))
        """,
        // What the server did for a customer that is not a change of the ledger: offers signed, download links made.
        """
        CREATE TABLE srv_customer_activity (
            id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, at BIGINT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN (\(activityKinds))), detail TEXT NOT NULL)
        """,
        "CREATE INDEX srv_customer_activity_customer ON srv_customer_activity (bundle_id, customer_id, at)",
        // The console's sessions (the hash of each cookie) and every action taken in it, with the operator's note.
        """
        CREATE TABLE srv_console_sessions (
            token_hash TEXT PRIMARY KEY, csrf_token TEXT NOT NULL, created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL, last_seen_at BIGINT NOT NULL, address TEXT)
        """,
        """
        CREATE TABLE srv_console_actions (
            id TEXT PRIMARY KEY, at BIGINT NOT NULL, action TEXT NOT NULL CHECK (action IN (\(consoleActions020))),
            bundle_id TEXT, target TEXT, note TEXT, outcome TEXT NOT NULL, session TEXT, address TEXT)
        """,
        "CREATE INDEX srv_console_actions_time ON srv_console_actions (at, id)",
        // Timelines: a customer's submissions, notifications and consumption requests, newest first.
        "CREATE INDEX srv_submissions_customer ON srv_submissions (bundle_id, customer_id, created_at)",
        "CREATE INDEX srv_notifications_customer ON srv_notifications (bundle_id, customer_id, received_at)",
        // The notifications log of one outcome or type, newest first.
        "CREATE INDEX srv_notifications_outcome ON srv_notifications (bundle_id, outcome, received_at)",
        "CREATE INDEX srv_notifications_type ON srv_notifications (bundle_id, type, received_at)",
        """
        CREATE INDEX srv_consumption_requests_customer ON srv_consumption_requests (bundle_id, customer_id, requested_at)
        """,
        // Every notification decoded, as the console shows it (the signed payload is kept only while it waits).
        "ALTER TABLE srv_notifications ADD COLUMN decoded TEXT",
    ]

    /// The figures' journal, days and subscriptions for an engine, and what the ledger already holds folded in.
    private static func figureTables(journalKey: String, days: String) -> [String] {
        [
            """
            CREATE TABLE srv_figure_changes (
                id \(journalKey), bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN (\(environments))),
                measure TEXT NOT NULL CHECK (measure IN (\(figureMeasures))), day BIGINT, product_id TEXT, currency TEXT,
                amount BIGINT NOT NULL, entries BIGINT NOT NULL, original_transaction_id TEXT)
            """,
            """
            CREATE TABLE srv_figures_daily (
                bundle_id TEXT NOT NULL, environment TEXT NOT NULL CHECK (environment IN (\(environments))),
                day BIGINT NOT NULL, measure TEXT NOT NULL CHECK (measure IN (\(figureMeasures))),
                product_id TEXT NOT NULL, currency TEXT NOT NULL, amount BIGINT NOT NULL, entries BIGINT NOT NULL,
                PRIMARY KEY (bundle_id, environment, day, measure, product_id, currency))\(days)
            """,
        ] + consoleTables + FigureStore.rebuildStatements
    }

    static let migrations: [Migration] = [
        Migration(
            "001-core",
            [
                """
                CREATE TABLE srv_apps (
                    bundle_id TEXT PRIMARY KEY, app_apple_id BIGINT, name TEXT NOT NULL, app_key TEXT NOT NULL UNIQUE,
                    shared_secrets TEXT NOT NULL, api_key_id TEXT, api_issuer_id TEXT, api_private_key TEXT,
                    accept_sandbox BOOLEAN NOT NULL, restore_policy TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE srv_products (
                    bundle_id TEXT NOT NULL REFERENCES srv_apps (bundle_id), product_id TEXT NOT NULL, type TEXT NOT NULL,
                    title TEXT NOT NULL, entitlements TEXT NOT NULL, credits TEXT NOT NULL, content TEXT NOT NULL,
                    subscription_group TEXT, duration_seconds BIGINT, price BIGINT, currency TEXT, position INTEGER NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, product_id))
                """,
                """
                CREATE TABLE srv_customers (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, alias_of TEXT, created_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, customer_id))
                """,
                """
                CREATE TABLE srv_submissions (
                    id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, idempotency_key TEXT,
                    kind TEXT NOT NULL, payload TEXT NOT NULL, environment TEXT NOT NULL, state TEXT NOT NULL,
                    attempts INTEGER NOT NULL, next_attempt_at BIGINT, last_status TEXT, last_error TEXT, reason TEXT,
                    transaction_ids TEXT NOT NULL, claimed_until BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                    confirmed_at BIGINT)
                """,
                "CREATE UNIQUE INDEX srv_submissions_idempotency ON srv_submissions (bundle_id, idempotency_key)",
                "CREATE INDEX srv_submissions_due ON srv_submissions (state, next_attempt_at)",
                """
                CREATE TABLE srv_transactions (
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL, product_id TEXT NOT NULL, product_type TEXT, quantity INTEGER NOT NULL,
                    purchase_date BIGINT NOT NULL, expires_date BIGINT, revocation_date BIGINT, revocation_reason TEXT,
                    is_upgraded BOOLEAN NOT NULL, ownership TEXT NOT NULL, price BIGINT, currency TEXT, storefront TEXT,
                    web_order_line_item_id TEXT, submission_id TEXT NOT NULL, confirmed BOOLEAN NOT NULL,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (environment, transaction_id))
                """,
                "CREATE INDEX srv_transactions_customer ON srv_transactions (bundle_id, customer_id)",
                "CREATE INDEX srv_transactions_original ON srv_transactions (environment, original_transaction_id)",
                """
                CREATE TABLE srv_balance_entries (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, credit TEXT NOT NULL, delta BIGINT NOT NULL,
                    reference TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (bundle_id, reference, credit))
                """,
                "CREATE INDEX srv_balance_customer ON srv_balance_entries (bundle_id, customer_id, credit)",
                """
                CREATE TABLE srv_finance (
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL, product_id TEXT NOT NULL,
                    amount BIGINT NOT NULL, currency TEXT NOT NULL, occurred_at BIGINT NOT NULL, kind TEXT NOT NULL,
                    PRIMARY KEY (environment, transaction_id, kind))
                """,
                "CREATE INDEX srv_finance_time ON srv_finance (bundle_id, occurred_at)",
                """
                CREATE TABLE srv_events (
                    id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
            ]
        ),
        // Settings the server makes for itself and every process must share, such as the secret signing
        // download URLs (a per-process secret would break URLs across restarts and between processes).
        Migration("003-content", ["CREATE TABLE srv_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)"]),
        Migration(
            "004-notifications",
            [
                // Each App Store Server Notification once: a retried delivery finds its UUID here.
                """
                CREATE TABLE srv_notifications (
                    notification_uuid TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, environment TEXT NOT NULL,
                    type TEXT NOT NULL, subtype TEXT, signed_date BIGINT, received_at BIGINT NOT NULL,
                    outcome TEXT NOT NULL, transaction_id TEXT, original_transaction_id TEXT, customer_id TEXT,
                    detail TEXT)
                """,
                "CREATE INDEX srv_notifications_received ON srv_notifications (bundle_id, received_at)",
                // The renewal state of each subscription, from the newest signed renewal info.
                """
                CREATE TABLE srv_subscription_states (
                    environment TEXT NOT NULL, original_transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                    product_id TEXT, auto_renew_product_id TEXT, auto_renew_status BOOLEAN, status INTEGER,
                    is_in_billing_retry BOOLEAN NOT NULL, grace_period_expires_date BIGINT, expiration_intent INTEGER,
                    renewal_date BIGINT, price_increase_status INTEGER, last_notification_type TEXT,
                    signed_date BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (environment, original_transaction_id))
                """,
            ]
        ),
        // What the app sent (a receipt of kilobytes) in a table of its own, written once: every claim and every
        // settlement rewrites its submission's row, and SQLite rewrites a row whole, overflow pages included.
        Migration(
            "005-submission-payloads",
            [
                "CREATE TABLE srv_submission_payloads (id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
                "INSERT INTO srv_submission_payloads (id, payload) SELECT id, payload FROM srv_submissions",
                "ALTER TABLE srv_submissions DROP COLUMN payload",
            ]
        ),
        // Most submissions come without an idempotency key: only those with one need a place in its index.
        Migration(
            "006-partial-idempotency-index",
            [
                "DROP INDEX srv_submissions_idempotency",
                """
                CREATE UNIQUE INDEX srv_submissions_idempotency ON srv_submissions (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
            ]
        ),
        // SQLite keeps a table whose primary key is not an integer as two B-trees: the rows by rowid, and the
        // key in an index of its own. Every commit writes each page it changed, a leaf of each B-tree at least,
        // and an acknowledged submission wrote 23 pages (94 KB of log, copied again by the checkpoint).
        // WITHOUT ROWID keeps the rows in their key's B-tree: five B-trees fewer to update and to write for
        // each submission. PostgreSQL has no rowid; there the step changes nothing.
        Migration(
            "007-tables-stored-by-key",
            clusteredByKey(
                "srv_customers",
                """
                bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, alias_of TEXT, created_at BIGINT NOT NULL,
                PRIMARY KEY (bundle_id, customer_id)
                """,
                indexes: []
            )
                + clusteredByKey(
                    "srv_submissions",
                    """
                    id TEXT NOT NULL PRIMARY KEY, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL,
                    idempotency_key TEXT, kind TEXT NOT NULL, environment TEXT NOT NULL, state TEXT NOT NULL,
                    attempts INTEGER NOT NULL, next_attempt_at BIGINT, last_status TEXT, last_error TEXT, reason TEXT,
                    transaction_ids TEXT NOT NULL, claimed_until BIGINT, created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL, confirmed_at BIGINT
                    """,
                    indexes: [
                        """
                        CREATE UNIQUE INDEX srv_submissions_idempotency ON srv_submissions (bundle_id, idempotency_key)
                        WHERE idempotency_key IS NOT NULL
                        """,
                        "CREATE INDEX srv_submissions_due ON srv_submissions (state, next_attempt_at)",
                    ]
                )
                + clusteredByKey(
                    "srv_transactions",
                    """
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                    customer_id TEXT NOT NULL, original_transaction_id TEXT NOT NULL, product_id TEXT NOT NULL,
                    product_type TEXT, quantity INTEGER NOT NULL, purchase_date BIGINT NOT NULL, expires_date BIGINT,
                    revocation_date BIGINT, revocation_reason TEXT, is_upgraded BOOLEAN NOT NULL, ownership TEXT NOT NULL,
                    price BIGINT, currency TEXT, storefront TEXT, web_order_line_item_id TEXT,
                    submission_id TEXT NOT NULL, confirmed BOOLEAN NOT NULL, created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL, PRIMARY KEY (environment, transaction_id)
                    """,
                    indexes: [
                        "CREATE INDEX srv_transactions_customer ON srv_transactions (bundle_id, customer_id)",
                        "CREATE INDEX srv_transactions_original ON srv_transactions (environment, original_transaction_id)",
                    ]
                )
                + clusteredByKey(
                    "srv_balance_entries",
                    """
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, credit TEXT NOT NULL, delta BIGINT NOT NULL,
                    reference TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (bundle_id, reference, credit)
                    """,
                    indexes: [
                        "CREATE INDEX srv_balance_customer ON srv_balance_entries (bundle_id, customer_id, credit)"
                    ]
                )
                + clusteredByKey(
                    "srv_finance",
                    """
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                    product_id TEXT NOT NULL, amount BIGINT NOT NULL, currency TEXT NOT NULL, occurred_at BIGINT NOT NULL,
                    kind TEXT NOT NULL, PRIMARY KEY (environment, transaction_id, kind)
                    """,
                    indexes: ["CREATE INDEX srv_finance_time ON srv_finance (bundle_id, occurred_at)"]
                ),
            only: .sqlite
        ),
        // Whether an id has guests linked to it (an account, never to be linked as a guest itself).
        Migration("008-customer-guests", ["CREATE INDEX srv_customers_alias ON srv_customers (bundle_id, alias_of)"]),
        // Why a submission waits to be retried, classified once when Apple answers (it was parsed out of
        // last_status by patterns, in Swift and in SQL). A rejection for this server's own configuration (21004)
        // revoked the customer's purchase; those submissions go back to the queue, and Apple's confirmation gives
        // back what the rejection took.
        Migration(
            "009-retry-causes",
            [
                "ALTER TABLE srv_submissions ADD COLUMN retry_cause TEXT",
                """
                UPDATE srv_submissions SET retry_cause = CASE
                    WHEN last_status IN ('status 21000', 'status 21004') OR last_status LIKE 'HTTP 401%' THEN 'configuration'
                    WHEN last_status IN ('status 21005', 'status 21009') OR last_status LIKE 'status 211%'
                        OR last_status LIKE 'HTTP 5%' THEN 'appleUnavailable'
                    WHEN last_status LIKE 'status %' OR last_status LIKE 'HTTP %'
                        OR last_status IN ('unreadable', 'redirect loop', 'database') THEN 'other'
                    ELSE 'appleUnavailable' END
                WHERE state = 'retrying'
                """,
                """
                UPDATE srv_submissions SET state = 'retrying', retry_cause = 'configuration', reason = NULL,
                    last_error = 'The shared secret does not match the one on file for the account.',
                    next_attempt_at = updated_at
                WHERE state = 'rejected' AND last_status = 'status 21004'
                """,
            ]
        ),
        // Apple often notifies before the app submits: a notification about a purchase no one owns yet is kept
        // whole, and applied when a submission records the purchase (the same facts, the same state, in any order).
        Migration(
            "010-waiting-notifications",
            [
                "ALTER TABLE srv_notifications ADD COLUMN signed_payload TEXT",
                """
                CREATE INDEX srv_notifications_unmatched ON srv_notifications (environment, original_transaction_id)
                WHERE outcome = 'unmatched'
                """,
            ]
        ),
        // The admin API pages through submissions of a state, oldest change first.
        Migration(
            "011-submission-pages",
            ["CREATE INDEX srv_submissions_state_updated ON srv_submissions (state, updated_at, id)"]
        ),
        // Catching up with Apple (CatchUp): one run per app at a time, and its last report; how far each app's
        // Notification History was read completely; and, per purchase, the customer history (its anchor) it is
        // read through, with the revision of that history's last page.
        Migration(
            "012-catch-up",
            [
                """
                CREATE TABLE srv_catch_up_runs (
                    bundle_id TEXT PRIMARY KEY, claimed_until BIGINT, finished_at BIGINT, outcome TEXT, report TEXT)
                """,
                """
                CREATE TABLE srv_catch_up_checkpoints (
                    bundle_id TEXT NOT NULL, environment TEXT NOT NULL, notifications_until BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL, PRIMARY KEY (bundle_id, environment))
                """,
                """
                CREATE TABLE srv_catch_up_purchases (
                    bundle_id TEXT NOT NULL, environment TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
                    anchor TEXT NOT NULL, revision TEXT, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id))
                """,
                // History read before a notification must not undo what the notification applied.
                """
                CREATE INDEX srv_notifications_applied_transaction ON srv_notifications (environment, transaction_id)
                WHERE outcome = 'applied'
                """,
            ]
        ),
        // Answering Apple's consumption requests (ConsumptionAnswers): what each app tells Apple beside the ledger, the
        // customers' consent, and each CONSUMPTION_REQUEST with its answer, a durable queue (a restart loses none).
        Migration(
            "013-consumption-answers",
            [
                "ALTER TABLE srv_apps ADD COLUMN consumption_sample_content_provided BOOLEAN NOT NULL DEFAULT FALSE",
                "ALTER TABLE srv_apps ADD COLUMN consumption_refund_preference TEXT",
                """
                CREATE TABLE srv_consumption_consents (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, consented BOOLEAN NOT NULL,
                    updated_at BIGINT NOT NULL, PRIMARY KEY (bundle_id, customer_id))
                """,
                """
                CREATE TABLE srv_consumption_requests (
                    notification_uuid TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, environment TEXT NOT NULL,
                    transaction_id TEXT NOT NULL, original_transaction_id TEXT, product_id TEXT, customer_id TEXT,
                    reason TEXT, state TEXT NOT NULL, detail TEXT, requested_at BIGINT NOT NULL, deadline BIGINT NOT NULL,
                    attempts INTEGER NOT NULL, next_attempt_at BIGINT, claimed_until BIGINT, body TEXT, sent_at BIGINT,
                    apple_status INTEGER, apple_error_code BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                "CREATE INDEX srv_consumption_requests_due ON srv_consumption_requests (state, next_attempt_at)",
                """
                CREATE INDEX srv_consumption_requests_app
                ON srv_consumption_requests (bundle_id, created_at, notification_uuid)
                """,
            ]
        ),
        // Offers the server signs for apps (Offers): the In-App Purchase key per app (kept as the App Store Server API
        // key is), the promotional offers of the catalogue with their rule, the operator's word on a customer's
        // introductory offer, and whether each ledger transaction was an introductory offer's (Apple's offerType 1).
        Migration(
            "014-offers",
            [
                "ALTER TABLE srv_apps ADD COLUMN in_app_purchase_key_id TEXT",
                "ALTER TABLE srv_apps ADD COLUMN in_app_purchase_issuer_id TEXT",
                "ALTER TABLE srv_apps ADD COLUMN in_app_purchase_private_key TEXT",
                "ALTER TABLE srv_transactions ADD COLUMN introductory_offer BOOLEAN NOT NULL DEFAULT FALSE",
                """
                CREATE TABLE srv_offers (
                    bundle_id TEXT NOT NULL, product_id TEXT NOT NULL, offer_identifier TEXT NOT NULL,
                    eligibility TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, product_id, offer_identifier))
                """,
                """
                CREATE TABLE srv_introductory_overrides (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, subscription_group TEXT NOT NULL,
                    allow_introductory_offer BOOLEAN NOT NULL, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, customer_id, subscription_group))
                """,
            ]
        ),
        // StoreKit Testing in Xcode (LocalVerifier): the certificates each app trusts for its Xcode and LocalTesting
        // data, a JSON array of PEM.
        Migration(
            "015-storekit-testing",
            ["ALTER TABLE srv_apps ADD COLUMN store_kit_test_certificates TEXT NOT NULL DEFAULT '[]'"]
        ),
        // Monthly billing with a 12-month commitment: each transaction's billing plan and place in its commitment, and
        // the subscription's plan and commitment from its renewal info.
        Migration(
            "016-commitment-plans",
            [
                "ALTER TABLE srv_transactions ADD COLUMN billing_plan_type TEXT",
                "ALTER TABLE srv_transactions ADD COLUMN commitment_period INTEGER",
                "ALTER TABLE srv_transactions ADD COLUMN commitment_periods INTEGER",
                "ALTER TABLE srv_transactions ADD COLUMN commitment_expires_date BIGINT",
                "ALTER TABLE srv_subscription_states ADD COLUMN billing_plan_type TEXT",
                "ALTER TABLE srv_subscription_states ADD COLUMN currency TEXT",
                "ALTER TABLE srv_subscription_states ADD COLUMN commitment_renewal_date BIGINT",
                "ALTER TABLE srv_subscription_states ADD COLUMN commitment_auto_renew_status BOOLEAN",
                "ALTER TABLE srv_subscription_states ADD COLUMN commitment_auto_renew_product_id TEXT",
                "ALTER TABLE srv_subscription_states ADD COLUMN commitment_renewal_billing_plan_type TEXT",
                "ALTER TABLE srv_subscription_states ADD COLUMN commitment_renewal_price BIGINT",
            ]
        ),
        // The ledger's states, kinds and reasons as enums in the schema too (they were free text, and a rejection was
        // recognised by the prefix "apple: " of its reason): CHECK constraints on the ledger's and the books' enum
        // columns, a rejection's answer in a column of its own, and where each row came from (it was hidden in
        // submission_id). SQLite adds a CHECK only by rebuilding the table.
        Migration(
            "017-typed-ledger-sqlite",
            [
                """
                CREATE TABLE srv_transactions_typed (
                    environment TEXT NOT NULL CHECK (environment IN (\(environments))),
                    transaction_id TEXT NOT NULL, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL, product_id TEXT NOT NULL,
                    product_type TEXT CHECK (product_type IN (\(productTypes))), quantity INTEGER NOT NULL,
                    purchase_date BIGINT NOT NULL, expires_date BIGINT, revocation_date BIGINT,
                    revocation_reason TEXT CHECK (revocation_reason IN (\(revocationReasons))), revocation_detail TEXT,
                    is_upgraded BOOLEAN NOT NULL, ownership TEXT NOT NULL CHECK (ownership IN (\(ownerships))),
                    price BIGINT, currency TEXT, storefront TEXT, web_order_line_item_id TEXT, submission_id TEXT NOT NULL,
                    source TEXT NOT NULL CHECK (source IN (\(ledgerSources))), confirmed BOOLEAN NOT NULL,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                    introductory_offer BOOLEAN NOT NULL DEFAULT FALSE, billing_plan_type TEXT, commitment_period INTEGER,
                    commitment_periods INTEGER, commitment_expires_date BIGINT,
                    PRIMARY KEY (environment, transaction_id)) WITHOUT ROWID
                """,
                "INSERT INTO srv_transactions_typed (\(ledgerColumns)) \(typedLedgerSelect)",
                "DROP TABLE srv_transactions",
                "ALTER TABLE srv_transactions_typed RENAME TO srv_transactions",
                "CREATE INDEX srv_transactions_customer ON srv_transactions (bundle_id, customer_id)",
                "CREATE INDEX srv_transactions_original ON srv_transactions (environment, original_transaction_id)",
                "CREATE INDEX srv_transactions_submission ON srv_transactions (submission_id)",
                """
                CREATE TABLE srv_finance_typed (
                    environment TEXT NOT NULL CHECK (environment IN (\(environments))), transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL, product_id TEXT NOT NULL, amount BIGINT NOT NULL, currency TEXT NOT NULL,
                    occurred_at BIGINT NOT NULL, kind TEXT NOT NULL CHECK (kind IN (\(financeKinds))),
                    PRIMARY KEY (environment, transaction_id, kind)) WITHOUT ROWID
                """,
                """
                INSERT INTO srv_finance_typed (environment, transaction_id, bundle_id, product_id, amount, currency,
                    occurred_at, kind)
                SELECT environment, transaction_id, bundle_id, product_id, amount, currency, occurred_at, kind
                FROM srv_finance
                """,
                "DROP TABLE srv_finance",
                "ALTER TABLE srv_finance_typed RENAME TO srv_finance",
                "CREATE INDEX srv_finance_time ON srv_finance (bundle_id, occurred_at)",
            ],
            only: .sqlite
        ),
        Migration(
            "017-typed-ledger-postgres",
            [
                "ALTER TABLE srv_transactions ADD COLUMN revocation_detail TEXT",
                "ALTER TABLE srv_transactions ADD COLUMN source TEXT",
                """
                UPDATE srv_transactions SET revocation_detail = substr(revocation_reason, 8), revocation_reason = 'rejected'
                WHERE revocation_reason LIKE 'apple: %'
                """,
                """
                UPDATE srv_transactions SET source = CASE WHEN submission_id LIKE 'notification:%' THEN 'notification'
                    WHEN submission_id = 'transactionHistory' THEN 'transactionHistory' ELSE 'submission' END
                """,
                "ALTER TABLE srv_transactions ALTER COLUMN source SET NOT NULL",
                """
                ALTER TABLE srv_transactions ADD CONSTRAINT srv_transactions_enums CHECK (
                    environment IN (\(environments)) AND (product_type IS NULL OR product_type IN (\(productTypes)))
                    AND (revocation_reason IS NULL OR revocation_reason IN (\(revocationReasons)))
                    AND ownership IN (\(ownerships)) AND source IN (\(ledgerSources)))
                """,
                "CREATE INDEX srv_transactions_submission ON srv_transactions (submission_id)",
                """
                ALTER TABLE srv_finance ADD CONSTRAINT srv_finance_enums CHECK (
                    environment IN (\(environments)) AND kind IN (\(financeKinds)))
                """,
            ],
            only: .postgres
        ),
        // One durable job queue (JobQueue): confirmations, consumption answers, catch-up runs and webhook deliveries
        // are claimed with a lease, retried with back-off and dead-lettered in one table, by one piece of code (each
        // table claimed its own work before). The submissions' own columns are checked like the ledger's.
        Migration(
            "018-jobs-sqlite",
            [jobsTable] + jobIndexes + queuedWork + [
                """
                CREATE TABLE srv_submissions_checked (
                    id TEXT NOT NULL PRIMARY KEY, bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL,
                    idempotency_key TEXT, kind TEXT NOT NULL CHECK (kind IN (\(submissionKinds))),
                    environment TEXT NOT NULL CHECK (environment IN (\(environments))),
                    state TEXT NOT NULL CHECK (state IN (\(submissionStates))), attempts INTEGER NOT NULL,
                    last_status TEXT, last_error TEXT, reason TEXT, transaction_ids TEXT NOT NULL,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, confirmed_at BIGINT,
                    retry_cause TEXT CHECK (retry_cause IN (\(retryCauses)))) WITHOUT ROWID
                """,
                "INSERT INTO srv_submissions_checked (\(submissionColumns)) SELECT \(submissionColumns) FROM srv_submissions",
                "DROP TABLE srv_submissions",
                "ALTER TABLE srv_submissions_checked RENAME TO srv_submissions",
                """
                CREATE UNIQUE INDEX srv_submissions_idempotency ON srv_submissions (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
                "CREATE INDEX srv_submissions_state_updated ON srv_submissions (state, updated_at, id)",
                "CREATE INDEX srv_submissions_retrying ON srv_submissions (retry_cause, bundle_id) WHERE state = 'retrying'",
                "DROP INDEX srv_consumption_requests_due",
                "ALTER TABLE srv_consumption_requests DROP COLUMN next_attempt_at",
                "ALTER TABLE srv_consumption_requests DROP COLUMN claimed_until",
                "ALTER TABLE srv_catch_up_runs DROP COLUMN claimed_until",
            ],
            only: .sqlite
        ),
        Migration(
            "018-jobs-postgres",
            [jobsTable] + jobIndexes + queuedWork + [
                "ALTER TABLE srv_submissions DROP COLUMN next_attempt_at",
                "ALTER TABLE srv_submissions DROP COLUMN claimed_until",
                """
                ALTER TABLE srv_submissions ADD CONSTRAINT srv_submissions_enums CHECK (
                    kind IN (\(submissionKinds)) AND environment IN (\(environments)) AND state IN (\(submissionStates))
                    AND (retry_cause IS NULL OR retry_cause IN (\(retryCauses))))
                """,
                "CREATE INDEX srv_submissions_retrying ON srv_submissions (retry_cause, bundle_id) WHERE state = 'retrying'",
                "DROP INDEX srv_consumption_requests_due",
                "ALTER TABLE srv_consumption_requests DROP COLUMN next_attempt_at",
                "ALTER TABLE srv_consumption_requests DROP COLUMN claimed_until",
                "ALTER TABLE srv_catch_up_runs DROP COLUMN claimed_until",
            ],
            only: .postgres
        ),
        // Events (EventLog): every change of the ledger as a typed event, numbered in commit order, with the indexes
        // the feed, a customer's timeline and a replay read; the webhook endpoints of each app, the deliveries of
        // events to them and every attempt with the start of its answer. The old srv_events (free-text notes that
        // nothing read) goes.
        Migration(
            "019-events",
            [
                "DROP TABLE srv_events",
                """
                CREATE TABLE srv_events (
                    sequence BIGINT NOT NULL PRIMARY KEY, id TEXT NOT NULL UNIQUE, bundle_id TEXT NOT NULL,
                    customer_id TEXT, type TEXT NOT NULL CHECK (type IN (\(eventTypes))),
                    source TEXT NOT NULL CHECK (source IN (\(eventSources019))),
                    environment TEXT CHECK (environment IN (\(environments))), occurred_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL, body TEXT NOT NULL)
                """,
                "CREATE INDEX srv_events_app ON srv_events (bundle_id, sequence)",
                "CREATE INDEX srv_events_customer ON srv_events (bundle_id, customer_id, sequence)",
                "CREATE INDEX srv_events_recorded ON srv_events (bundle_id, created_at)",
                """
                CREATE TABLE srv_webhook_endpoints (
                    id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL REFERENCES srv_apps (bundle_id), url TEXT NOT NULL,
                    description TEXT, event_types TEXT NOT NULL, enabled BOOLEAN NOT NULL, secret TEXT NOT NULL,
                    previous_secret TEXT, previous_secret_expires_at BIGINT, dispatched_through BIGINT NOT NULL,
                    consecutive_failures INTEGER NOT NULL, last_success_at BIGINT, last_failure_at BIGINT,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                "CREATE INDEX srv_webhook_endpoints_app ON srv_webhook_endpoints (bundle_id, created_at, id)",
                """
                CREATE TABLE srv_webhook_deliveries (
                    id TEXT PRIMARY KEY, endpoint_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                    event_sequence BIGINT NOT NULL, event_id TEXT NOT NULL,
                    event_type TEXT NOT NULL CHECK (event_type IN (\(eventTypes))), customer_id TEXT,
                    state TEXT NOT NULL CHECK (state IN (\(deliveryStates))), attempts INTEGER NOT NULL,
                    replay BOOLEAN NOT NULL, deadline BIGINT NOT NULL, delivered_at BIGINT, last_attempt_at BIGINT,
                    last_status INTEGER, last_error TEXT, last_answer TEXT, last_url TEXT, last_duration BIGINT,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                "CREATE INDEX srv_webhook_deliveries_endpoint ON srv_webhook_deliveries (endpoint_id, created_at, id)",
                """
                CREATE INDEX srv_webhook_deliveries_state ON srv_webhook_deliveries (endpoint_id, state, created_at, id)
                """,
                // The sweep of deliveries whose deadline passed reads only the pending ones.
                """
                CREATE INDEX srv_webhook_deliveries_deadline ON srv_webhook_deliveries (deadline)
                WHERE state = 'pending'
                """,
                """
                CREATE TABLE srv_webhook_attempts (
                    delivery_id TEXT NOT NULL, attempt INTEGER NOT NULL, at BIGINT NOT NULL, url TEXT NOT NULL,
                    status INTEGER, answer TEXT, error TEXT, duration BIGINT, PRIMARY KEY (delivery_id, attempt))
                """,
            ]
        ),
        // The operator's console (docs/console.md): the figures (`Figures`), each confirmation attempt, the customers'
        // activity, sessions and the actions taken, the indexes of a customer's timeline, notifications decoded.
        Migration(
            "020-console-sqlite",
            figureTables(journalKey: "INTEGER PRIMARY KEY", days: " WITHOUT ROWID"),
            only: .sqlite
        ),
        Migration("020-console-postgres", figureTables(journalKey: "BIGSERIAL PRIMARY KEY", days: ""), only: .postgres),
        // The customers' AppTransactions (`AppTransactions`): the one each customer's app sent, verified, with Apple's
        // fields and the JWS.
        Migration(
            "021-app-transactions",
            [
                """
                CREATE TABLE srv_app_transactions (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL,
                    environment TEXT NOT NULL CHECK (environment IN (\(environments))), app_apple_id BIGINT,
                    app_transaction_id TEXT, application_version TEXT, version_external_identifier BIGINT,
                    original_application_version TEXT, original_purchase_date BIGINT, preorder_date BIGINT,
                    receipt_creation_date BIGINT, original_platform TEXT, device_verification TEXT,
                    device_verification_nonce TEXT, signed_app_transaction TEXT NOT NULL, received_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, customer_id))
                """
            ]
        ),
        // An endpoint's dispatcher (`WebhookDeliveries.sendAtDispatch`): the worker that sends its newest events as it
        // dispatches them, before any delivery row is written, and until when it holds that role.
        Migration(
            "022-webhook-dispatcher",
            [
                "ALTER TABLE srv_webhook_endpoints ADD COLUMN dispatcher TEXT",
                "ALTER TABLE srv_webhook_endpoints ADD COLUMN dispatcher_until BIGINT",
            ]
        ),
        // What a purchase reads of its customer costs the same whatever their history (docs/benchmarks.md): each
        // credit's balance kept as a total beside its entries (the ledger writes both, in one transaction), and the
        // customer index ordered by product type, so that the purchases that grant access and the latest consumables
        // are read without the rest.
        Migration(
            "023-balances-and-holdings",
            [
                """
                CREATE TABLE srv_balances (
                    bundle_id TEXT NOT NULL, customer_id TEXT NOT NULL, credit TEXT NOT NULL, balance BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, customer_id, credit))
                """,
                """
                INSERT INTO srv_balances (bundle_id, customer_id, credit, balance)
                SELECT bundle_id, customer_id, credit, CAST(SUM(delta) AS BIGINT) FROM srv_balance_entries
                GROUP BY bundle_id, customer_id, credit
                """,
                "DROP INDEX srv_transactions_customer",
                "CREATE INDEX srv_transactions_customer ON srv_transactions (bundle_id, customer_id, product_type, purchase_date)",
            ]
        ),
        // A group's holder is the job queue's, for every kind (`JobQueue.hold`): an endpoint's dispatcher moves from
        // the endpoint's row to it. The endpoint's `dispatcher` columns stay, unwritten by this release, for the
        // previous release's servers during a rolling upgrade on PostgreSQL (docs/operations.md); a later migration
        // drops them.
        Migration(
            "024-job-holds",
            [
                """
                CREATE TABLE srv_job_holds (
                    kind TEXT NOT NULL CHECK (kind IN (\(jobKinds018))), queue_group TEXT NOT NULL, holder TEXT NOT NULL,
                    held_until BIGINT NOT NULL, PRIMARY KEY (kind, queue_group))
                """
            ]
        ),
        // Traces (docs/tracing.md): the W3C traceparent of the change that wrote an event or queued a job, so that a
        // webhook attempt or a confirmation continues the purchase's trace. NULL with tracing off: nothing more is
        // written then.
        Migration(
            "025-traces",
            [
                "ALTER TABLE srv_events ADD COLUMN trace TEXT",
                "ALTER TABLE srv_jobs ADD COLUMN trace TEXT",
            ]
        ),
        // Imports of an app's existing customers (`Imports`, docs/operations.md): each import and its rows, each row's
        // outcome and where its history stands. Events and jobs gain the source and the kind `import`: PostgreSQL
        // swaps the CHECK constraints; SQLite, which cannot, rebuilds the three tables (srv_events with all its rows:
        // the one long step of this upgrade on a large database).
        Migration("026-imports-sqlite", importTables + importSourcesSQLite, only: .sqlite),
        Migration("026-imports-postgres", importTables + importSourcesPostgres, only: .postgres),
        // The console cancels imports: `cancelImport` joins the CHECK of the console's actions. PostgreSQL swaps the
        // constraint; SQLite rebuilds the table with its rows.
        Migration(
            "027-console-imports-sqlite",
            [
                """
                CREATE TABLE srv_console_actions_027 (
                    id TEXT PRIMARY KEY, at BIGINT NOT NULL, action TEXT NOT NULL CHECK (action IN (\(consoleActions))),
                    bundle_id TEXT, target TEXT, note TEXT, outcome TEXT NOT NULL, session TEXT, address TEXT)
                """,
                """
                INSERT INTO srv_console_actions_027 (id, at, action, bundle_id, target, note, outcome, session, address)
                SELECT id, at, action, bundle_id, target, note, outcome, session, address FROM srv_console_actions
                """,
                "DROP TABLE srv_console_actions",
                "ALTER TABLE srv_console_actions_027 RENAME TO srv_console_actions",
                "CREATE INDEX srv_console_actions_time ON srv_console_actions (at, id)",
            ],
            only: .sqlite
        ),
        Migration(
            "027-console-imports-postgres",
            [
                """
                ALTER TABLE srv_console_actions DROP CONSTRAINT srv_console_actions_action_check,
                    ADD CONSTRAINT srv_console_actions_action_check CHECK (action IN (\(consoleActions)))
                """
            ],
            only: .postgres
        ),
        // A claim's index holds every column its search reads. A job under way stays queued, with its claim's end,
        // until its attempt ends: with thousands of confirmations waiting seconds for Apple, every claim (50 a second)
        // and its read before it walked that many rows of the table to learn each was still held, which was most of
        // the SQLite work that Apple's latency adds to confirming (perf, docs/benchmarks.md). The search now reads
        // the index alone (SQLite: a covering index).
        Migration(
            "028-job-claims",
            [
                "DROP INDEX srv_jobs_due",
                """
                CREATE INDEX srv_jobs_due ON srv_jobs
                    (kind, queue_group, state, due_at, position, claimed_until, stream, job_key)
                """,
            ]
        ),
        // The customer answer's `firstSeen` is an account row's `created_at`, which a link now moves back to the
        // guest's when the guest was recorded first (`LedgerStore.setAlias`). Accounts linked before that get the
        // earliest of their guests' here.
        Migration(
            "029-customers-first-seen",
            [
                """
                UPDATE srv_customers SET created_at = (
                    SELECT MIN(guest.created_at) FROM srv_customers AS guest
                    WHERE guest.bundle_id = srv_customers.bundle_id AND guest.alias_of = srv_customers.customer_id)
                WHERE alias_of IS NULL AND EXISTS (
                    SELECT 1 FROM srv_customers AS guest
                    WHERE guest.bundle_id = srv_customers.bundle_id AND guest.alias_of = srv_customers.customer_id
                      AND guest.created_at < srv_customers.created_at)
                """
            ]
        ),
    ]

    private static let importTables = [
        """
        CREATE TABLE srv_imports (
            id TEXT NOT NULL PRIMARY KEY, bundle_id TEXT NOT NULL, name TEXT, file_sha256 TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN (\(importStates))), rows_total INTEGER NOT NULL, last_error TEXT,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, finished_at BIGINT)
        """,
        "CREATE INDEX srv_imports_app ON srv_imports (bundle_id, created_at, id)",
        // One import of a file at a time: the same file sent again while it is stored or read is that import.
        """
        CREATE UNIQUE INDEX srv_imports_file ON srv_imports (bundle_id, file_sha256)
        WHERE state IN ('receiving', 'running')
        """,
        """
        CREATE TABLE srv_import_rows (
            import_id TEXT NOT NULL, row_number INTEGER NOT NULL, customer_id TEXT,
            kind TEXT CHECK (kind IN (\(importRowKinds))), input TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN (\(importRowOutcomes))),
            reason TEXT CHECK (reason IN (\(importRowReasons))), detail TEXT,
            environment TEXT CHECK (environment IN (\(environments))), original_transaction_id TEXT, revision TEXT,
            recorded INTEGER NOT NULL, updated INTEGER NOT NULL, revoked INTEGER NOT NULL, unchanged INTEGER NOT NULL,
            conflicts INTEGER NOT NULL, unverifiable INTEGER NOT NULL, attempts INTEGER NOT NULL,
            next_attempt_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (import_id, row_number))
        """,
        // The rows to read next, and a list of one outcome, in the file's order.
        "CREATE INDEX srv_import_rows_outcome ON srv_import_rows (import_id, outcome, row_number)",
    ]

    /// SQLite: srv_jobs, srv_job_holds and srv_events again, with `import` in their CHECKs, their rows and indexes.
    private static let importSourcesSQLite: [String] =
        [
            """
            CREATE TABLE srv_jobs_026 (
                kind TEXT NOT NULL CHECK (kind IN (\(jobKinds))), job_key TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN (\(jobStates))), queue_group TEXT NOT NULL, stream TEXT,
                position BIGINT NOT NULL, attempts INTEGER NOT NULL, due_at BIGINT NOT NULL, claimed_until BIGINT,
                last_error TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, trace TEXT,
                PRIMARY KEY (kind, job_key))
            """,
            """
            INSERT INTO srv_jobs_026 (kind, job_key, state, queue_group, stream, position, attempts, due_at,
                claimed_until, last_error, created_at, updated_at, trace)
            SELECT kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until, last_error,
                created_at, updated_at, trace
            FROM srv_jobs
            """,
            "DROP TABLE srv_jobs",
            "ALTER TABLE srv_jobs_026 RENAME TO srv_jobs",
        ] + jobIndexes + [
            """
            CREATE TABLE srv_job_holds_026 (
                kind TEXT NOT NULL CHECK (kind IN (\(jobKinds))), queue_group TEXT NOT NULL, holder TEXT NOT NULL,
                held_until BIGINT NOT NULL, PRIMARY KEY (kind, queue_group))
            """,
            "INSERT INTO srv_job_holds_026 (kind, queue_group, holder, held_until) SELECT kind, queue_group, holder, held_until FROM srv_job_holds",
            "DROP TABLE srv_job_holds",
            "ALTER TABLE srv_job_holds_026 RENAME TO srv_job_holds",
            """
            CREATE TABLE srv_events_026 (
                sequence BIGINT NOT NULL PRIMARY KEY, id TEXT NOT NULL UNIQUE, bundle_id TEXT NOT NULL,
                customer_id TEXT, type TEXT NOT NULL CHECK (type IN (\(eventTypes))),
                source TEXT NOT NULL CHECK (source IN (\(eventSources))),
                environment TEXT CHECK (environment IN (\(environments))), occurred_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL, body TEXT NOT NULL, trace TEXT)
            """,
            """
            INSERT INTO srv_events_026 (sequence, id, bundle_id, customer_id, type, source, environment, occurred_at,
                created_at, body, trace)
            SELECT sequence, id, bundle_id, customer_id, type, source, environment, occurred_at, created_at, body, trace
            FROM srv_events
            """,
            "DROP TABLE srv_events",
            "ALTER TABLE srv_events_026 RENAME TO srv_events",
            "CREATE INDEX srv_events_app ON srv_events (bundle_id, sequence)",
            "CREATE INDEX srv_events_customer ON srv_events (bundle_id, customer_id, sequence)",
            "CREATE INDEX srv_events_recorded ON srv_events (bundle_id, created_at)",
        ]

    /// PostgreSQL: the three CHECKs (named by PostgreSQL after their table and column) swapped for ones with `import`.
    private static let importSourcesPostgres = [
        """
        ALTER TABLE srv_jobs DROP CONSTRAINT srv_jobs_kind_check,
            ADD CONSTRAINT srv_jobs_kind_check CHECK (kind IN (\(jobKinds)))
        """,
        """
        ALTER TABLE srv_job_holds DROP CONSTRAINT srv_job_holds_kind_check,
            ADD CONSTRAINT srv_job_holds_kind_check CHECK (kind IN (\(jobKinds)))
        """,
        """
        ALTER TABLE srv_events DROP CONSTRAINT srv_events_source_check,
            ADD CONSTRAINT srv_events_source_check CHECK (source IN (\(eventSources)))
        """,
    ]
}
