import TillStorage

/// The verification server's tables. Times are BIGINT milliseconds since 1970; JSON documents are TEXT.
enum ServerSchema {
    static let name = "server"

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
    ]
}
