import TillStorage

/// The simulator's tables. Times are BIGINT milliseconds since 1970; JSON documents are TEXT.
enum SimulatorSchema {
    static let name = "simulator"

    static let migrations: [Migration] = [
        Migration(
            "001-core",
            [
                """
                CREATE TABLE sim_keys (
                    name TEXT PRIMARY KEY, private_key_pem TEXT NOT NULL, chain_pem TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)
                """,
                """
                CREATE TABLE sim_apps (
                    app_apple_id BIGINT PRIMARY KEY, bundle_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                    shared_secret TEXT NOT NULL, notification_url_production TEXT, notification_url_sandbox TEXT,
                    grace_period_days INTEGER NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_api_keys (
                    key_id TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL REFERENCES sim_apps (app_apple_id),
                    issuer_id TEXT NOT NULL, public_key_pem TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_products (
                    app_apple_id BIGINT NOT NULL REFERENCES sim_apps (app_apple_id), product_id TEXT NOT NULL,
                    type TEXT NOT NULL, reference_name TEXT NOT NULL, review_state TEXT NOT NULL,
                    subscription_group TEXT, subscription_period TEXT, group_level INTEGER NOT NULL,
                    family_shareable BOOLEAN NOT NULL, prices TEXT NOT NULL, localizations TEXT NOT NULL,
                    created_at BIGINT NOT NULL, PRIMARY KEY (app_apple_id, product_id))
                """,
                """
                CREATE TABLE sim_accounts (
                    id TEXT PRIMARY KEY, environment TEXT NOT NULL, email TEXT NOT NULL, storefront TEXT NOT NULL,
                    can_make_payments BOOLEAN NOT NULL, payment_failure INTEGER, ask_to_buy BOOLEAN NOT NULL,
                    family_id TEXT, deleted BOOLEAN NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_devices (
                    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES sim_accounts (id), name TEXT NOT NULL,
                    vendor_identifier TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_payments (
                    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, device_id TEXT NOT NULL, app_apple_id BIGINT NOT NULL,
                    environment TEXT NOT NULL, product_id TEXT NOT NULL, quantity INTEGER NOT NULL,
                    application_username TEXT, app_account_token TEXT, state TEXT NOT NULL, error_code INTEGER,
                    transaction_id TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_transactions (
                    transaction_id TEXT PRIMARY KEY, original_transaction_id TEXT NOT NULL, account_id TEXT NOT NULL,
                    app_apple_id BIGINT NOT NULL, product_id TEXT NOT NULL, product_type TEXT NOT NULL,
                    environment TEXT NOT NULL, quantity INTEGER NOT NULL, purchase_date BIGINT NOT NULL,
                    original_purchase_date BIGINT NOT NULL, expires_date BIGINT, web_order_line_item_id TEXT,
                    subscription_group TEXT, app_account_token TEXT, ownership TEXT NOT NULL, price BIGINT NOT NULL,
                    currency TEXT NOT NULL, storefront TEXT NOT NULL, storefront_id TEXT NOT NULL,
                    transaction_reason TEXT NOT NULL, revocation_date BIGINT, revocation_reason INTEGER,
                    revocation_type TEXT, is_upgraded BOOLEAN NOT NULL, offer_type INTEGER, is_trial BOOLEAN NOT NULL,
                    order_id TEXT NOT NULL, device_id TEXT, finished BOOLEAN NOT NULL, signed_sequence BIGINT NOT NULL,
                    created_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_transactions_account ON sim_transactions (account_id, app_apple_id, environment)",
                "CREATE INDEX sim_transactions_original ON sim_transactions (original_transaction_id)",
                "CREATE INDEX sim_transactions_order ON sim_transactions (order_id)",
                """
                CREATE TABLE sim_queue (
                    id TEXT PRIMARY KEY, device_id TEXT NOT NULL, app_apple_id BIGINT NOT NULL, seq BIGINT NOT NULL,
                    state TEXT NOT NULL, transaction_id TEXT, restored_transaction_id TEXT, payment_id TEXT,
                    product_id TEXT NOT NULL, error_code INTEGER, error_message TEXT, finished BOOLEAN NOT NULL,
                    deliveries INTEGER NOT NULL, created_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_queue_device ON sim_queue (device_id, app_apple_id, finished)",
                """
                CREATE TABLE sim_subscriptions (
                    original_transaction_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, app_apple_id BIGINT NOT NULL,
                    environment TEXT NOT NULL, subscription_group TEXT NOT NULL, product_id TEXT NOT NULL,
                    auto_renew_product_id TEXT NOT NULL, auto_renew_status BOOLEAN NOT NULL, expires_date BIGINT NOT NULL,
                    status INTEGER NOT NULL, renewal_count INTEGER NOT NULL, billing_retry BOOLEAN NOT NULL,
                    grace_period_expires_date BIGINT, retry_until BIGINT, expiration_intent INTEGER,
                    last_transaction_id TEXT NOT NULL, recent_start_date BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_subscriptions_due ON sim_subscriptions (status, expires_date)",
                """
                CREATE TABLE sim_receipts (
                    opaque_value TEXT PRIMARY KEY, account_id TEXT NOT NULL, device_id TEXT NOT NULL,
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_notifications (
                    uuid TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL,
                    notification_type TEXT NOT NULL, subtype TEXT, original_transaction_id TEXT, transaction_id TEXT,
                    signed_payload TEXT NOT NULL, test_token TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT, send_attempts TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_notifications_due ON sim_notifications (state, next_attempt_at)",
                "CREATE INDEX sim_notifications_app ON sim_notifications (app_apple_id, environment, created_at)",
            ]
        ),
        // The App Store Server API's calls that change or record something: consumption information, renewal-date
        // extensions (one subscription, or every active subscriber of a product), and Retention Messaging.
        Migration(
            "002-server-api-2026",
            [
                """
                CREATE TABLE sim_consumption (
                    id TEXT PRIMARY KEY, transaction_id TEXT NOT NULL, app_apple_id BIGINT NOT NULL,
                    environment TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
                    requested_at BIGINT, received_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_consumption_app ON sim_consumption (app_apple_id, environment, received_at)",
                """
                CREATE TABLE sim_extensions (
                    request_identifier TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, mass_request_identifier TEXT,
                    extend_by_days INTEGER NOT NULL, extend_reason_code INTEGER NOT NULL, succeeded BOOLEAN NOT NULL,
                    web_order_line_item_id TEXT, effective_date BIGINT, created_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, environment, request_identifier, original_transaction_id))
                """,
                "CREATE INDEX sim_extensions_subscription ON sim_extensions (original_transaction_id, created_at)",
                """
                CREATE TABLE sim_mass_extensions (
                    request_identifier TEXT NOT NULL, app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL,
                    product_id TEXT NOT NULL, storefront_country_codes TEXT NOT NULL, extend_by_days INTEGER NOT NULL,
                    extend_reason_code INTEGER NOT NULL, complete BOOLEAN NOT NULL, complete_date BIGINT,
                    succeeded_count INTEGER NOT NULL, failed_count INTEGER NOT NULL, created_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, environment, request_identifier))
                """,
                """
                CREATE TABLE sim_retention_images (
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, image_identifier TEXT NOT NULL,
                    image_size TEXT NOT NULL, state TEXT NOT NULL, png TEXT NOT NULL, created_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, environment, image_identifier))
                """,
                """
                CREATE TABLE sim_retention_messages (
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, message_identifier TEXT NOT NULL,
                    state TEXT NOT NULL, content TEXT NOT NULL, created_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, environment, message_identifier))
                """,
                """
                CREATE TABLE sim_retention_defaults (
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, product_id TEXT NOT NULL,
                    locale TEXT NOT NULL, message_identifier TEXT NOT NULL, updated_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, environment, product_id, locale))
                """,
                """
                CREATE TABLE sim_retention_settings (
                    app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL, realtime_url TEXT,
                    updated_at BIGINT NOT NULL, PRIMARY KEY (app_apple_id, environment))
                """,
                """
                CREATE TABLE sim_retention_requests (
                    request_identifier TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL, product_id TEXT NOT NULL, user_locale TEXT NOT NULL,
                    performance_test_id TEXT, outcome TEXT NOT NULL, response TEXT, duration_ms INTEGER,
                    created_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_retention_requests_app ON sim_retention_requests (app_apple_id, environment, created_at)",
                """
                CREATE TABLE sim_performance_tests (
                    request_id TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL, target TEXT NOT NULL, result TEXT NOT NULL,
                    summary TEXT, created_at BIGINT NOT NULL)
                """,
            ]
        ),
        // Offers (introductory, promotional, offer codes, win-back), the offer on each transaction and the one a
        // subscription carries to its next renewals; what a renewal charges and the customer's answer to a price
        // increase; the share a prorated refund gave back.
        Migration(
            "003-offers",
            [
                """
                CREATE TABLE sim_offers (
                    app_apple_id BIGINT NOT NULL, product_id TEXT NOT NULL, kind TEXT NOT NULL,
                    offer_identifier TEXT NOT NULL, discount_type TEXT NOT NULL, duration TEXT, periods INTEGER NOT NULL,
                    prices TEXT NOT NULL, custom_code TEXT, redemption_limit INTEGER, minimum_paid_days INTEGER,
                    minimum_days_since_expiry INTEGER, maximum_days_since_expiry INTEGER, created_at BIGINT NOT NULL,
                    PRIMARY KEY (app_apple_id, product_id, kind, offer_identifier))
                """,
                """
                CREATE TABLE sim_offer_codes (
                    code TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, product_id TEXT NOT NULL,
                    offer_identifier TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sim_offer_redemptions (
                    id TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, account_id TEXT NOT NULL,
                    environment TEXT NOT NULL, product_id TEXT NOT NULL, kind TEXT NOT NULL,
                    offer_identifier TEXT NOT NULL, code TEXT, transaction_id TEXT, redeemed_at BIGINT NOT NULL)
                """,
                "CREATE INDEX sim_offer_redemptions_account ON sim_offer_redemptions (account_id, app_apple_id)",
                """
                CREATE TABLE sim_signature_nonces (
                    nonce TEXT PRIMARY KEY, app_apple_id BIGINT NOT NULL, used_at BIGINT NOT NULL)
                """,
                "ALTER TABLE sim_transactions ADD COLUMN offer_identifier TEXT",
                "ALTER TABLE sim_transactions ADD COLUMN offer_discount_type TEXT",
                "ALTER TABLE sim_transactions ADD COLUMN offer_period TEXT",
                "ALTER TABLE sim_transactions ADD COLUMN revocation_percentage INTEGER",
                "ALTER TABLE sim_subscriptions ADD COLUMN offer TEXT",
                "ALTER TABLE sim_subscriptions ADD COLUMN renewal_price BIGINT",
                "ALTER TABLE sim_subscriptions ADD COLUMN price_increase_status INTEGER",
            ]
        ),
        // Monthly billing with a 12-month commitment (April 2026): a 1-year product's monthly prices, and each
        // period's place in its commitment.
        Migration(
            "004-commitment-plans",
            [
                "ALTER TABLE sim_products ADD COLUMN monthly_commitment_prices TEXT",
                "ALTER TABLE sim_transactions ADD COLUMN billing_plan_type TEXT",
                "ALTER TABLE sim_transactions ADD COLUMN commitment_period INTEGER",
                "ALTER TABLE sim_transactions ADD COLUMN commitment_expires_date BIGINT",
                "ALTER TABLE sim_transactions ADD COLUMN commitment_price BIGINT",
                "ALTER TABLE sim_subscriptions ADD COLUMN billing_plan_type TEXT",
                "ALTER TABLE sim_subscriptions ADD COLUMN commitment_period INTEGER",
                "ALTER TABLE sim_subscriptions ADD COLUMN commitment_expires_date BIGINT",
                "ALTER TABLE sim_subscriptions ADD COLUMN commitment_auto_renew BOOLEAN",
            ]
        ),
    ]
}
