--
-- PostgreSQL database dump
--

\restrict eu1lp6RhmeIYm6kRKWF4MePgeKXHhMdCsREP6V0sWD3SYxRBRHUQpVJWTs2kCfm

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: srv_app_transactions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_app_transactions (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    environment text NOT NULL,
    app_apple_id bigint,
    app_transaction_id text,
    application_version text,
    version_external_identifier bigint,
    original_application_version text,
    original_purchase_date bigint,
    preorder_date bigint,
    receipt_creation_date bigint,
    original_platform text,
    device_verification text,
    device_verification_nonce text,
    signed_app_transaction text NOT NULL,
    received_at bigint NOT NULL,
    CONSTRAINT srv_app_transactions_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text])))
);


--
-- Name: srv_apps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_apps (
    bundle_id text NOT NULL,
    app_apple_id bigint,
    name text NOT NULL,
    app_key text NOT NULL,
    shared_secrets text NOT NULL,
    api_key_id text,
    api_issuer_id text,
    api_private_key text,
    accept_sandbox boolean NOT NULL,
    restore_policy text NOT NULL,
    created_at bigint NOT NULL,
    consumption_sample_content_provided boolean DEFAULT false NOT NULL,
    consumption_refund_preference text,
    in_app_purchase_key_id text,
    in_app_purchase_issuer_id text,
    in_app_purchase_private_key text,
    store_kit_test_certificates text DEFAULT '[]'::text NOT NULL
);


--
-- Name: srv_balance_entries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_balance_entries (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    credit text NOT NULL,
    delta bigint NOT NULL,
    reference text NOT NULL,
    created_at bigint NOT NULL
);


--
-- Name: srv_balances; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_balances (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    credit text NOT NULL,
    balance bigint NOT NULL
);


--
-- Name: srv_catch_up_checkpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_catch_up_checkpoints (
    bundle_id text NOT NULL,
    environment text NOT NULL,
    notifications_until bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_catch_up_purchases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_catch_up_purchases (
    bundle_id text NOT NULL,
    environment text NOT NULL,
    original_transaction_id text NOT NULL,
    anchor text NOT NULL,
    revision text,
    updated_at bigint NOT NULL
);


--
-- Name: srv_catch_up_runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_catch_up_runs (
    bundle_id text NOT NULL,
    finished_at bigint,
    outcome text,
    report text
);


--
-- Name: srv_console_actions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_console_actions (
    id text NOT NULL,
    at bigint NOT NULL,
    action text NOT NULL,
    bundle_id text,
    target text,
    note text,
    outcome text NOT NULL,
    session text,
    address text,
    CONSTRAINT srv_console_actions_action_check CHECK ((action = ANY (ARRAY['signIn'::text, 'signInRefused'::text, 'signOut'::text, 'grant'::text, 'revoke'::text, 'adjustBalance'::text, 'retrySubmission'::text, 'retryAllSubmissions'::text, 'saveProduct'::text, 'uploadContent'::text, 'deleteContent'::text, 'createApp'::text, 'updateApp'::text, 'rotateSharedSecret'::text, 'removeSharedSecret'::text, 'setAPIKey'::text, 'setInAppPurchaseKey'::text, 'addCertificate'::text, 'removeCertificate'::text, 'putOffer'::text, 'deleteOffer'::text, 'catchUp'::text])))
);


--
-- Name: srv_console_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_console_sessions (
    token_hash text NOT NULL,
    csrf_token text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    address text
);


--
-- Name: srv_consumption_consents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_consumption_consents (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    consented boolean NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_consumption_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_consumption_requests (
    notification_uuid text NOT NULL,
    bundle_id text NOT NULL,
    environment text NOT NULL,
    transaction_id text NOT NULL,
    original_transaction_id text,
    product_id text,
    customer_id text,
    reason text,
    state text NOT NULL,
    detail text,
    requested_at bigint NOT NULL,
    deadline bigint NOT NULL,
    attempts integer NOT NULL,
    body text,
    sent_at bigint,
    apple_status integer,
    apple_error_code bigint,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_customer_activity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_customer_activity (
    id text NOT NULL,
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    at bigint NOT NULL,
    kind text NOT NULL,
    detail text NOT NULL,
    CONSTRAINT srv_customer_activity_kind_check CHECK ((kind = ANY (ARRAY['promotionalOfferSigned'::text, 'introductoryEligibilitySigned'::text, 'downloadsIssued'::text])))
);


--
-- Name: srv_customers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_customers (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    alias_of text,
    created_at bigint NOT NULL
);


--
-- Name: srv_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_events (
    sequence bigint NOT NULL,
    id text NOT NULL,
    bundle_id text NOT NULL,
    customer_id text,
    type text NOT NULL,
    source text NOT NULL,
    environment text,
    occurred_at bigint NOT NULL,
    created_at bigint NOT NULL,
    body text NOT NULL,
    CONSTRAINT srv_events_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text]))),
    CONSTRAINT srv_events_source_check CHECK ((source = ANY (ARRAY['submission'::text, 'confirmation'::text, 'notification'::text, 'catchUp'::text, 'app'::text, 'operator'::text, 'consumption'::text]))),
    CONSTRAINT srv_events_type_check CHECK ((type = ANY (ARRAY['purchase.initial'::text, 'subscription.renewed'::text, 'purchase.nonRenewing'::text, 'credits.purchased'::text, 'credits.debited'::text, 'credits.adjusted'::text, 'subscription.autoRenewOff'::text, 'subscription.autoRenewOn'::text, 'subscription.billingIssue'::text, 'subscription.billingRecovered'::text, 'subscription.expired'::text, 'subscription.productChanged'::text, 'subscription.extended'::text, 'subscription.priceIncrease'::text, 'subscription.priceIncreaseConsented'::text, 'purchase.refunded'::text, 'purchase.refundReversed'::text, 'purchase.confirmed'::text, 'purchase.rejected'::text, 'access.granted'::text, 'access.revoked'::text, 'customer.transferred'::text, 'consumption.answerSent'::text])))
);


--
-- Name: srv_figure_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_figure_changes (
    id bigint NOT NULL,
    bundle_id text NOT NULL,
    environment text NOT NULL,
    measure text NOT NULL,
    day bigint,
    product_id text,
    currency text,
    amount bigint NOT NULL,
    entries bigint NOT NULL,
    original_transaction_id text,
    CONSTRAINT srv_figure_changes_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text]))),
    CONSTRAINT srv_figure_changes_measure_check CHECK ((measure = ANY (ARRAY['purchase'::text, 'refund'::text, 'refundReversed'::text, 'revocation'::text, 'restoration'::text, 'renewal'::text, 'subscription'::text])))
);


--
-- Name: srv_figure_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.srv_figure_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: srv_figure_changes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.srv_figure_changes_id_seq OWNED BY public.srv_figure_changes.id;


--
-- Name: srv_figures_daily; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_figures_daily (
    bundle_id text NOT NULL,
    environment text NOT NULL,
    day bigint NOT NULL,
    measure text NOT NULL,
    product_id text NOT NULL,
    currency text NOT NULL,
    amount bigint NOT NULL,
    entries bigint NOT NULL,
    CONSTRAINT srv_figures_daily_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text]))),
    CONSTRAINT srv_figures_daily_measure_check CHECK ((measure = ANY (ARRAY['purchase'::text, 'refund'::text, 'refundReversed'::text, 'revocation'::text, 'restoration'::text, 'renewal'::text, 'subscription'::text])))
);


--
-- Name: srv_figures_subscriptions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_figures_subscriptions (
    environment text NOT NULL,
    original_transaction_id text NOT NULL,
    bundle_id text NOT NULL,
    product_id text NOT NULL,
    started_at bigint NOT NULL,
    ends_at bigint NOT NULL,
    trial boolean NOT NULL,
    trial_ends_at bigint,
    converted_at bigint,
    monthly_amount bigint NOT NULL,
    currency text,
    periods integer NOT NULL,
    updated_at bigint NOT NULL,
    CONSTRAINT srv_figures_subscriptions_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text])))
);


--
-- Name: srv_finance; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_finance (
    environment text NOT NULL,
    transaction_id text NOT NULL,
    bundle_id text NOT NULL,
    product_id text NOT NULL,
    amount bigint NOT NULL,
    currency text NOT NULL,
    occurred_at bigint NOT NULL,
    kind text NOT NULL,
    CONSTRAINT srv_finance_enums CHECK (((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text])) AND (kind = ANY (ARRAY['purchase'::text, 'refund'::text, 'refundReversed'::text, 'revocation'::text, 'restoration'::text]))))
);


--
-- Name: srv_introductory_overrides; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_introductory_overrides (
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    subscription_group text NOT NULL,
    allow_introductory_offer boolean NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_jobs (
    kind text NOT NULL,
    job_key text NOT NULL,
    state text NOT NULL,
    queue_group text NOT NULL,
    stream text,
    "position" bigint NOT NULL,
    attempts integer NOT NULL,
    due_at bigint NOT NULL,
    claimed_until bigint,
    last_error text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    CONSTRAINT srv_jobs_kind_check CHECK ((kind = ANY (ARRAY['confirmation'::text, 'consumptionAnswer'::text, 'catchUp'::text, 'delivery'::text]))),
    CONSTRAINT srv_jobs_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'deadLettered'::text])))
);


--
-- Name: srv_notifications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_notifications (
    notification_uuid text NOT NULL,
    bundle_id text NOT NULL,
    environment text NOT NULL,
    type text NOT NULL,
    subtype text,
    signed_date bigint,
    received_at bigint NOT NULL,
    outcome text NOT NULL,
    transaction_id text,
    original_transaction_id text,
    customer_id text,
    detail text,
    signed_payload text,
    decoded text
);


--
-- Name: srv_offers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_offers (
    bundle_id text NOT NULL,
    product_id text NOT NULL,
    offer_identifier text NOT NULL,
    eligibility text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_products; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_products (
    bundle_id text NOT NULL,
    product_id text NOT NULL,
    type text NOT NULL,
    title text NOT NULL,
    entitlements text NOT NULL,
    credits text NOT NULL,
    content text NOT NULL,
    subscription_group text,
    duration_seconds bigint,
    price bigint,
    currency text,
    "position" integer NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: srv_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_settings (
    name text NOT NULL,
    value text NOT NULL
);


--
-- Name: srv_submission_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_submission_attempts (
    submission_id text NOT NULL,
    number integer NOT NULL,
    at bigint NOT NULL,
    environment text NOT NULL,
    outcome text NOT NULL,
    status text,
    error text,
    retry_cause text,
    duration bigint,
    CONSTRAINT srv_submission_attempts_environment_check CHECK ((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text]))),
    CONSTRAINT srv_submission_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['pending'::text, 'confirmed'::text, 'retrying'::text, 'rejected'::text, 'deadLettered'::text]))),
    CONSTRAINT srv_submission_attempts_retry_cause_check CHECK ((retry_cause = ANY (ARRAY['appleUnavailable'::text, 'configuration'::text, 'other'::text])))
);


--
-- Name: srv_submission_payloads; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_submission_payloads (
    id text NOT NULL,
    payload text NOT NULL
);


--
-- Name: srv_submissions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_submissions (
    id text NOT NULL,
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    idempotency_key text,
    kind text NOT NULL,
    environment text NOT NULL,
    state text NOT NULL,
    attempts integer NOT NULL,
    last_status text,
    last_error text,
    reason text,
    transaction_ids text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    confirmed_at bigint,
    retry_cause text,
    CONSTRAINT srv_submissions_enums CHECK (((kind = ANY (ARRAY['appReceipt'::text, 'transactionReceipt'::text, 'signedTransaction'::text])) AND (environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text])) AND (state = ANY (ARRAY['pending'::text, 'confirmed'::text, 'retrying'::text, 'rejected'::text, 'deadLettered'::text])) AND ((retry_cause IS NULL) OR (retry_cause = ANY (ARRAY['appleUnavailable'::text, 'configuration'::text, 'other'::text])))))
);


--
-- Name: srv_subscription_states; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_subscription_states (
    environment text NOT NULL,
    original_transaction_id text NOT NULL,
    bundle_id text NOT NULL,
    product_id text,
    auto_renew_product_id text,
    auto_renew_status boolean,
    status integer,
    is_in_billing_retry boolean NOT NULL,
    grace_period_expires_date bigint,
    expiration_intent integer,
    renewal_date bigint,
    price_increase_status integer,
    last_notification_type text,
    signed_date bigint NOT NULL,
    updated_at bigint NOT NULL,
    billing_plan_type text,
    currency text,
    commitment_renewal_date bigint,
    commitment_auto_renew_status boolean,
    commitment_auto_renew_product_id text,
    commitment_renewal_billing_plan_type text,
    commitment_renewal_price bigint
);


--
-- Name: srv_transactions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_transactions (
    environment text NOT NULL,
    transaction_id text NOT NULL,
    bundle_id text NOT NULL,
    customer_id text NOT NULL,
    original_transaction_id text NOT NULL,
    product_id text NOT NULL,
    product_type text,
    quantity integer NOT NULL,
    purchase_date bigint NOT NULL,
    expires_date bigint,
    revocation_date bigint,
    revocation_reason text,
    is_upgraded boolean NOT NULL,
    ownership text NOT NULL,
    price bigint,
    currency text,
    storefront text,
    web_order_line_item_id text,
    submission_id text NOT NULL,
    confirmed boolean NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    introductory_offer boolean DEFAULT false NOT NULL,
    billing_plan_type text,
    commitment_period integer,
    commitment_periods integer,
    commitment_expires_date bigint,
    revocation_detail text,
    source text NOT NULL,
    CONSTRAINT srv_transactions_enums CHECK (((environment = ANY (ARRAY['Production'::text, 'Sandbox'::text, 'Xcode'::text, 'LocalTesting'::text])) AND ((product_type IS NULL) OR (product_type = ANY (ARRAY['consumable'::text, 'nonConsumable'::text, 'autoRenewable'::text, 'nonRenewing'::text, 'freeSubscription'::text]))) AND ((revocation_reason IS NULL) OR (revocation_reason = ANY (ARRAY['refund'::text, 'upgraded'::text, 'familyRevoked'::text, 'rejected'::text, 'operator'::text]))) AND (ownership = ANY (ARRAY['PURCHASED'::text, 'FAMILY_SHARED'::text])) AND (source = ANY (ARRAY['submission'::text, 'notification'::text, 'transactionHistory'::text, 'operator'::text]))))
);


--
-- Name: srv_webhook_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_webhook_attempts (
    delivery_id text NOT NULL,
    attempt integer NOT NULL,
    at bigint NOT NULL,
    url text NOT NULL,
    status integer,
    answer text,
    error text,
    duration bigint
);


--
-- Name: srv_webhook_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_webhook_deliveries (
    id text NOT NULL,
    endpoint_id text NOT NULL,
    bundle_id text NOT NULL,
    event_sequence bigint NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    customer_id text,
    state text NOT NULL,
    attempts integer NOT NULL,
    replay boolean NOT NULL,
    deadline bigint NOT NULL,
    delivered_at bigint,
    last_attempt_at bigint,
    last_status integer,
    last_error text,
    last_answer text,
    last_url text,
    last_duration bigint,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    CONSTRAINT srv_webhook_deliveries_event_type_check CHECK ((event_type = ANY (ARRAY['purchase.initial'::text, 'subscription.renewed'::text, 'purchase.nonRenewing'::text, 'credits.purchased'::text, 'credits.debited'::text, 'credits.adjusted'::text, 'subscription.autoRenewOff'::text, 'subscription.autoRenewOn'::text, 'subscription.billingIssue'::text, 'subscription.billingRecovered'::text, 'subscription.expired'::text, 'subscription.productChanged'::text, 'subscription.extended'::text, 'subscription.priceIncrease'::text, 'subscription.priceIncreaseConsented'::text, 'purchase.refunded'::text, 'purchase.refundReversed'::text, 'purchase.confirmed'::text, 'purchase.rejected'::text, 'access.granted'::text, 'access.revoked'::text, 'customer.transferred'::text, 'consumption.answerSent'::text]))),
    CONSTRAINT srv_webhook_deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'delivered'::text, 'deadLettered'::text])))
);


--
-- Name: srv_webhook_endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.srv_webhook_endpoints (
    id text NOT NULL,
    bundle_id text NOT NULL,
    url text NOT NULL,
    description text,
    event_types text NOT NULL,
    enabled boolean NOT NULL,
    secret text NOT NULL,
    previous_secret text,
    previous_secret_expires_at bigint,
    dispatched_through bigint NOT NULL,
    consecutive_failures integer NOT NULL,
    last_success_at bigint,
    last_failure_at bigint,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    dispatcher text,
    dispatcher_until bigint
);


--
-- Name: till_schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.till_schema_migrations (
    schema text NOT NULL,
    id text NOT NULL,
    applied_at bigint NOT NULL
);


--
-- Name: srv_figure_changes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_figure_changes ALTER COLUMN id SET DEFAULT nextval('public.srv_figure_changes_id_seq'::regclass);


--
-- Data for Name: srv_app_transactions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_app_transactions (bundle_id, customer_id, environment, app_apple_id, app_transaction_id, application_version, version_external_identifier, original_application_version, original_purchase_date, preorder_date, receipt_creation_date, original_platform, device_verification, device_verification_nonce, signed_app_transaction, received_at) FROM stdin;
com.example.till	alice	Sandbox	\N	704212450052136104	1	0	1.0	1795904610935	\N	1795904611078	iOS	FEckj8deMad1FDMK3YqLu2zcrsBKZS/1k3FM3GsM1xDhnWQY6VR/YePlEKr2Mmo4	363c0459-5f5b-4fb9-90aa-6780e97ca735	eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlDWlRDQ0FneWdBd0lCQWdJUUhWcUl4U01HVHhpZVpyWmVsMU85ZVRBS0JnZ3Foa2pPUFFRREFqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3SUJjTk1qQXdNVEF4TURBd01EQXdXaGdQTWpBMk1EQXhNREV3TURBd01EQmFNSUdBTVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNU2N3SlFZRFZRUUREQjVVYVd4c0lGTnBiWFZzWVhSdmNpQlNaV05sYVhCMElGTnBaMjVwYm1jd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUUnM3T3NoNEtwT0VFdEp3alZlWEd0aUNuY09CSjJMUG9zUkw0NExGVk9kV2ZPZjFsc1JNNm9sZnpGRVJDYWp6MzBlQ2NWallmLzdobTl0SGMwOHNDbG8xTXdVVEFNQmdOVkhSTUJBZjhFQWpBQU1BNEdBMVVkRHdFQi93UUVBd0lIZ0RBZkJnTlZIU01FR0RBV2dCU3dnRzlkVnczaEFOczZoNGUrZElEZjZ5OXR2akFRQmdvcWhraUc5Mk5rQmdzQkJBSUZBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvKzVJMGxxQ0Y3VU9KaVhrMFkwT0RrdTJPNDRvMHJvWVFVRUZuRms3MTBBSWdITWV2elhYeS9TQmVHTmNITk4wd0xIdUg1c0F4QVdJU1RVUlpsUXl0Qm4wPSIsIk1JSUNnVENDQWlpZ0F3SUJBZ0lRSi9xOE1ZVGNwSHk1L2Z6R0FQNm5IVEFLQmdncWhrak9QUVFEQWpCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNQ0FYRFRJd01ERXdNVEF3TURBd01Gb1lEekl3TmpReE1qTXhNRFl3TURBd1dqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVNiZkhBMGsveGlHbXZwQnpIWEtvMVVDL043OGkxUnZZTkZVWFlrNEFLZXB5U2lDQzlkaXZXVXloa09vK2VPMEZ1VzE1N1ZGY3kwQjNaTGl6Z0hRMHF6bzNnd2RqQVNCZ05WSFJNQkFmOEVDREFHQVFIL0FnRUFNQTRHQTFVZER3RUIvd1FFQXdJQkJqQWRCZ05WSFE0RUZnUVVzSUJ2WFZjTjRRRGJPb2VIdm5TQTMrc3ZiYjR3SHdZRFZSMGpCQmd3Rm9BVWRtSitheFZ0bWlHUjFDbHVKZmFjRUtRd1Zia3dFQVlLS29aSWh2ZGpaQVlDQVFRQ0JRQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdBb1hxQVZ1V3AwZVlBZFdZa3p0UTh2VmxPanN2S3BrUFA2RjJhOTRqaTlnQ0lEaUY5eEdwRzZuTnVXQ2VnMm5vT25MdlFIYmJwU21qQmoxS0NRRWhwdFpFIiwiTUlJQ016Q0NBZGlnQXdJQkFnSVFiWlE5VGUvendzNHp0ZzJiYU9RTkV6QUtCZ2dxaGtqT1BRUURBakI0TVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNUjh3SFFZRFZRUUREQlpVYVd4c0lGTnBiWFZzWVhSdmNpQlNiMjkwSUVOQk1DQVhEVEl3TURFd01UQXdNREF3TUZvWUR6SXdOamt4TWpNeE1USXdNREF3V2pCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVtQzJLT2VBZzZDTTRXcFRCeEIrQXV3MGRHVVZaamxzZU9zdG05YW9Oc0Y1a1Y2clVxbW1RNzRzQWZtMlFoU2dONnJoQTVuQklhbmlKb1ZXL1FpaTZDNk5DTUVBd0R3WURWUjBUQVFIL0JBVXdBd0VCL3pBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhaaWZtc1ZiWm9oa2RRcGJpWDJuQkNrTUZXNU1Bb0dDQ3FHU000OUJBTUNBMGtBTUVZQ0lRQ3UrVllGaTlmcmU1Y21XWlB2OUVFRTdXWHk1WEZoRVU0dHZvaVd2STBVQUFJaEFPRGJub09wblJOcVZWdjBMRTlHRWFTQTd4QU5WdDdWbU5UTndnMnRlWUs5Il19.eyJhcHBUcmFuc2FjdGlvbklkIjoiNzA0MjEyNDUwMDUyMTM2MTA0IiwiYXBwbGljYXRpb25WZXJzaW9uIjoiMSIsImJ1bmRsZUlkIjoiY29tLmV4YW1wbGUudGlsbCIsImRldmljZVZlcmlmaWNhdGlvbiI6IkZFY2tqOGRlTWFkMUZETUszWXFMdTJ6Y3JzQktaUy8xazNGTTNHc00xeERobldRWTZWUi9ZZVBsRUtyMk1tbzQiLCJkZXZpY2VWZXJpZmljYXRpb25Ob25jZSI6IjM2M2MwNDU5LTVmNWItNGZiOS05MGFhLTY3ODBlOTdjYTczNSIsIm9yaWdpbmFsQXBwbGljYXRpb25WZXJzaW9uIjoiMS4wIiwib3JpZ2luYWxQbGF0Zm9ybSI6ImlPUyIsIm9yaWdpbmFsUHVyY2hhc2VEYXRlIjoxNzk1OTA0NjEwOTM1LCJyZWNlaXB0Q3JlYXRpb25EYXRlIjoxNzk1OTA0NjExMDc4LCJyZWNlaXB0VHlwZSI6IlNhbmRib3giLCJ2ZXJzaW9uRXh0ZXJuYWxJZGVudGlmaWVyIjowfQ.89U-_nypD1PxyHn_24Fd08V_WAZDtsc_V8SqJKLxY3IHBwLDfqYzfZm8ZZcIdiMhncumJqDKTXN8BE8JKbfpYw	1795904611092
com.example.till	bob	Sandbox	\N	704212450052136104	1	0	1.0	1795904610935	\N	1795904611687	iOS	AcD4hKKKyX6TFzXC4Xw+i7pfc9NPLy7SPBjFtEQraMKPdkFQjCVLF3rfuzo5u+tP	564fad95-9ddf-4e92-923e-3f1c3199507e	eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlDWlRDQ0FneWdBd0lCQWdJUUhWcUl4U01HVHhpZVpyWmVsMU85ZVRBS0JnZ3Foa2pPUFFRREFqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3SUJjTk1qQXdNVEF4TURBd01EQXdXaGdQTWpBMk1EQXhNREV3TURBd01EQmFNSUdBTVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNU2N3SlFZRFZRUUREQjVVYVd4c0lGTnBiWFZzWVhSdmNpQlNaV05sYVhCMElGTnBaMjVwYm1jd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUUnM3T3NoNEtwT0VFdEp3alZlWEd0aUNuY09CSjJMUG9zUkw0NExGVk9kV2ZPZjFsc1JNNm9sZnpGRVJDYWp6MzBlQ2NWallmLzdobTl0SGMwOHNDbG8xTXdVVEFNQmdOVkhSTUJBZjhFQWpBQU1BNEdBMVVkRHdFQi93UUVBd0lIZ0RBZkJnTlZIU01FR0RBV2dCU3dnRzlkVnczaEFOczZoNGUrZElEZjZ5OXR2akFRQmdvcWhraUc5Mk5rQmdzQkJBSUZBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvKzVJMGxxQ0Y3VU9KaVhrMFkwT0RrdTJPNDRvMHJvWVFVRUZuRms3MTBBSWdITWV2elhYeS9TQmVHTmNITk4wd0xIdUg1c0F4QVdJU1RVUlpsUXl0Qm4wPSIsIk1JSUNnVENDQWlpZ0F3SUJBZ0lRSi9xOE1ZVGNwSHk1L2Z6R0FQNm5IVEFLQmdncWhrak9QUVFEQWpCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNQ0FYRFRJd01ERXdNVEF3TURBd01Gb1lEekl3TmpReE1qTXhNRFl3TURBd1dqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVNiZkhBMGsveGlHbXZwQnpIWEtvMVVDL043OGkxUnZZTkZVWFlrNEFLZXB5U2lDQzlkaXZXVXloa09vK2VPMEZ1VzE1N1ZGY3kwQjNaTGl6Z0hRMHF6bzNnd2RqQVNCZ05WSFJNQkFmOEVDREFHQVFIL0FnRUFNQTRHQTFVZER3RUIvd1FFQXdJQkJqQWRCZ05WSFE0RUZnUVVzSUJ2WFZjTjRRRGJPb2VIdm5TQTMrc3ZiYjR3SHdZRFZSMGpCQmd3Rm9BVWRtSitheFZ0bWlHUjFDbHVKZmFjRUtRd1Zia3dFQVlLS29aSWh2ZGpaQVlDQVFRQ0JRQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdBb1hxQVZ1V3AwZVlBZFdZa3p0UTh2VmxPanN2S3BrUFA2RjJhOTRqaTlnQ0lEaUY5eEdwRzZuTnVXQ2VnMm5vT25MdlFIYmJwU21qQmoxS0NRRWhwdFpFIiwiTUlJQ016Q0NBZGlnQXdJQkFnSVFiWlE5VGUvendzNHp0ZzJiYU9RTkV6QUtCZ2dxaGtqT1BRUURBakI0TVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNUjh3SFFZRFZRUUREQlpVYVd4c0lGTnBiWFZzWVhSdmNpQlNiMjkwSUVOQk1DQVhEVEl3TURFd01UQXdNREF3TUZvWUR6SXdOamt4TWpNeE1USXdNREF3V2pCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVtQzJLT2VBZzZDTTRXcFRCeEIrQXV3MGRHVVZaamxzZU9zdG05YW9Oc0Y1a1Y2clVxbW1RNzRzQWZtMlFoU2dONnJoQTVuQklhbmlKb1ZXL1FpaTZDNk5DTUVBd0R3WURWUjBUQVFIL0JBVXdBd0VCL3pBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhaaWZtc1ZiWm9oa2RRcGJpWDJuQkNrTUZXNU1Bb0dDQ3FHU000OUJBTUNBMGtBTUVZQ0lRQ3UrVllGaTlmcmU1Y21XWlB2OUVFRTdXWHk1WEZoRVU0dHZvaVd2STBVQUFJaEFPRGJub09wblJOcVZWdjBMRTlHRWFTQTd4QU5WdDdWbU5UTndnMnRlWUs5Il19.eyJhcHBUcmFuc2FjdGlvbklkIjoiNzA0MjEyNDUwMDUyMTM2MTA0IiwiYXBwbGljYXRpb25WZXJzaW9uIjoiMSIsImJ1bmRsZUlkIjoiY29tLmV4YW1wbGUudGlsbCIsImRldmljZVZlcmlmaWNhdGlvbiI6IkFjRDRoS0tLeVg2VEZ6WEM0WHcraTdwZmM5TlBMeTdTUEJqRnRFUXJhTUtQZGtGUWpDVkxGM3JmdXpvNXUrdFAiLCJkZXZpY2VWZXJpZmljYXRpb25Ob25jZSI6IjU2NGZhZDk1LTlkZGYtNGU5Mi05MjNlLTNmMWMzMTk5NTA3ZSIsIm9yaWdpbmFsQXBwbGljYXRpb25WZXJzaW9uIjoiMS4wIiwib3JpZ2luYWxQbGF0Zm9ybSI6ImlPUyIsIm9yaWdpbmFsUHVyY2hhc2VEYXRlIjoxNzk1OTA0NjEwOTM1LCJyZWNlaXB0Q3JlYXRpb25EYXRlIjoxNzk1OTA0NjExNjg3LCJyZWNlaXB0VHlwZSI6IlNhbmRib3giLCJ2ZXJzaW9uRXh0ZXJuYWxJZGVudGlmaWVyIjowfQ.VM6nYSWzx-SeG-Wk5nddK5ExMFDhXh2urLeuz_vCZlG5bcSICGlLTVVryUkzsVvbAiDxpC0I2F_RBxdJAhW69Q	1795904611691
\.


--
-- Data for Name: srv_apps; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_apps (bundle_id, app_apple_id, name, app_key, shared_secrets, api_key_id, api_issuer_id, api_private_key, accept_sandbox, restore_policy, created_at, consumption_sample_content_provided, consumption_refund_preference, in_app_purchase_key_id, in_app_purchase_issuer_id, in_app_purchase_private_key, store_kit_test_certificates) FROM stdin;
com.example.till	1957831706	Till Demo	tk_b76730af43b1335f7f6968d910aac7b864a430f2e31108ba	["90d08e3199177cb116829106d782a126"]	VBV0HHLFGA	cf8edd63-d2e5-4131-845b-6fec78c66736	-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg62V1zMRAWF1R2gDb\ndJTT8/uc3dpe9vOlw2sYMgeF28qhRANCAAQL921gbbNPevJQvwoQFUCIC3WSCWBo\nk5OhW/+1YNKh3jb4IMxrk1aCSPVJFVA1xYaah0OcZl894CmFEqEgJnXj\n-----END PRIVATE KEY-----	t	keepWithFirstOwner	1795904610890	f	\N	\N	\N	\N	[]
\.


--
-- Data for Name: srv_balance_entries; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_balance_entries (bundle_id, customer_id, credit, delta, reference, created_at) FROM stdin;
com.example.till	alice	gems	200	purchase:Sandbox:2000000900000001	1795904611412
com.example.till	alice	gems	-30	debit:5:alice:alice-spend-1	1795904611557
com.example.till	bob	gems	100	purchase:Sandbox:2000000900000002	1795904611725
com.example.till	bob	gems	-100	debit:3:bob:bob-spend-1	1795904611852
com.example.till	carol	gems	5	adjust:5:carol:carol-gift-1	1795904611915
\.


--
-- Data for Name: srv_balances; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_balances (bundle_id, customer_id, credit, balance) FROM stdin;
com.example.till	alice	gems	170
com.example.till	bob	gems	0
com.example.till	carol	gems	5
\.


--
-- Data for Name: srv_catch_up_checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_catch_up_checkpoints (bundle_id, environment, notifications_until, updated_at) FROM stdin;
com.example.till	Production	1795904610988	1795904610988
com.example.till	Sandbox	1795904611017	1795904611017
\.


--
-- Data for Name: srv_catch_up_purchases; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_catch_up_purchases (bundle_id, environment, original_transaction_id, anchor, revision, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_catch_up_runs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_catch_up_runs (bundle_id, finished_at, outcome, report) FROM stdin;
com.example.till	1795904611029	complete	{"outcome":"complete","environments":[{"transactions":{"complete":true,"histories":0,"pages":0,"unmatched":0,"revoked":0,"recorded":0,"refused":0,"fetched":0,"unchanged":0,"updated":0},"notifications":{"complete":true,"ignored":0,"from":1795299810988,"pages":1,"to":1795904610988,"fetched":0,"refused":0,"applied":0,"duplicate":0},"environment":"Production"},{"transactions":{"complete":true,"histories":0,"pages":0,"unmatched":0,"revoked":0,"recorded":0,"refused":0,"fetched":0,"unchanged":0,"updated":0},"notifications":{"complete":true,"ignored":0,"from":1795299811017,"pages":1,"to":1795904611017,"fetched":0,"refused":0,"applied":0,"duplicate":0},"environment":"Sandbox"}],"startedAt":1795904610988,"trigger":"start","finishedAt":1795904611029,"bundleId":"com.example.till"}
\.


--
-- Data for Name: srv_console_actions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_console_actions (id, at, action, bundle_id, target, note, outcome, session, address) FROM stdin;
e6ff8927-c0fb-46ed-b73c-12ddd804bfdc	1795904612016	signIn	\N	\N	\N	done	f7f14d0a5a75	127.0.0.1
\.


--
-- Data for Name: srv_console_sessions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_console_sessions (token_hash, csrf_token, created_at, expires_at, last_seen_at, address) FROM stdin;
f7f14d0a5a75734aeefe69b964aa2d2f05bbfd0439989acb75e8756fa618060d	mTirlT3MwzgjWSrqMyz1Sc6M7zoqUiRLNdTmLhTLxlg	1795904612014	1795933412014	1795904612014	127.0.0.1
\.


--
-- Data for Name: srv_consumption_consents; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_consumption_consents (bundle_id, customer_id, consented, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_consumption_requests; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_consumption_requests (notification_uuid, bundle_id, environment, transaction_id, original_transaction_id, product_id, customer_id, reason, state, detail, requested_at, deadline, attempts, body, sent_at, apple_status, apple_error_code, created_at, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_customer_activity; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_customer_activity (id, bundle_id, customer_id, at, kind, detail) FROM stdin;
\.


--
-- Data for Name: srv_customers; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_customers (bundle_id, customer_id, alias_of, created_at) FROM stdin;
com.example.till	alice	\N	1795904611249
com.example.till	bob	\N	1795904611717
com.example.till	carol	\N	1795904611885
\.


--
-- Data for Name: srv_events; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_events (sequence, id, bundle_id, customer_id, type, source, environment, occurred_at, created_at, body) FROM stdin;
1	evt_55e3d4a4516aab628e2d704129d4a361	com.example.till	alice	purchase.initial	submission	Sandbox	1795904611161	1795904611277	{"bundleId":"com.example.till","createdAt":1795904611277,"customer":{"aliases":[],"balances":{},"entitlements":[{"environment":"Sandbox","id":"pro","productId":"pro","provisional":false,"transactionId":"2000000900000000"}],"id":"alice"},"environment":"Sandbox","id":"evt_55e3d4a4516aab628e2d704129d4a361","occurredAt":1795904611161,"product":{"entitlements":["pro"],"id":"pro","type":"nonConsumable"},"sequence":1,"source":{"id":"a4141b90-aadb-4e0a-9ec9-9363658ff5d1","kind":"submission"},"transaction":{"confirmed":false,"originalTransactionId":"2000000900000000","ownership":"PURCHASED","purchaseDate":1795904611161,"quantity":1,"storefront":"USA","transactionId":"2000000900000000"},"type":"purchase.initial"}
2	evt_fa23dfd7308d85baa8401f6c16568f2d	com.example.till	alice	purchase.confirmed	notification	Sandbox	1795904611262	1795904611277	{"bundleId":"com.example.till","createdAt":1795904611277,"customer":{"aliases":[],"balances":{},"entitlements":[{"environment":"Sandbox","id":"pro","productId":"pro","provisional":false,"transactionId":"2000000900000000"}],"id":"alice"},"environment":"Sandbox","id":"evt_fa23dfd7308d85baa8401f6c16568f2d","occurredAt":1795904611262,"product":{"entitlements":["pro"],"id":"pro","type":"nonConsumable"},"sequence":2,"source":{"id":"9bbe1cd7-7889-48ab-8fdf-c7583468ba33","kind":"notification","notificationType":"ONE_TIME_CHARGE"},"transaction":{"confirmed":true,"originalTransactionId":"2000000900000000","ownership":"PURCHASED","purchaseDate":1795904611161,"quantity":1,"storefront":"USA","transactionId":"2000000900000000"},"type":"purchase.confirmed"}
3	evt_eb4df7ccdb43e8c40ae12cc805b57bf9	com.example.till	alice	credits.purchased	submission	Sandbox	1795904611386	1795904611433	{"balanceChanges":{"gems":200},"bundleId":"com.example.till","createdAt":1795904611433,"customer":{"aliases":[],"balances":{"gems":200},"entitlements":[{"environment":"Sandbox","id":"pro","productId":"pro","provisional":false,"transactionId":"2000000900000000"}],"id":"alice"},"environment":"Sandbox","id":"evt_eb4df7ccdb43e8c40ae12cc805b57bf9","occurredAt":1795904611386,"product":{"entitlements":[],"id":"gems.100","type":"consumable"},"sequence":3,"source":{"id":"3a9b8599-fb75-4c37-a19e-4d32bdb7d5c6","kind":"submission"},"transaction":{"confirmed":false,"originalTransactionId":"2000000900000001","ownership":"PURCHASED","purchaseDate":1795904611386,"quantity":2,"storefront":"USA","transactionId":"2000000900000001"},"type":"credits.purchased"}
4	evt_7f6f28e345b0b73a3c255116e705a13e	com.example.till	alice	purchase.confirmed	notification	Sandbox	1795904611420	1795904611433	{"bundleId":"com.example.till","createdAt":1795904611433,"customer":{"aliases":[],"balances":{"gems":200},"entitlements":[{"environment":"Sandbox","id":"pro","productId":"pro","provisional":false,"transactionId":"2000000900000000"}],"id":"alice"},"environment":"Sandbox","id":"evt_7f6f28e345b0b73a3c255116e705a13e","occurredAt":1795904611420,"product":{"entitlements":[],"id":"gems.100","type":"consumable"},"sequence":4,"source":{"id":"df760454-44e6-416e-99c8-6394d65cadea","kind":"notification","notificationType":"ONE_TIME_CHARGE"},"transaction":{"confirmed":true,"originalTransactionId":"2000000900000001","ownership":"PURCHASED","purchaseDate":1795904611386,"quantity":2,"storefront":"USA","transactionId":"2000000900000001"},"type":"purchase.confirmed"}
5	evt_44b371474fe702c7851811405ccda15c	com.example.till	alice	credits.debited	app	\N	1795904611557	1795904611563	{"balanceChanges":{"gems":-30},"bundleId":"com.example.till","createdAt":1795904611563,"customer":{"aliases":[],"balances":{"gems":170},"entitlements":[{"environment":"Sandbox","id":"pro","productId":"pro","provisional":false,"transactionId":"2000000900000000"}],"id":"alice"},"id":"evt_44b371474fe702c7851811405ccda15c","occurredAt":1795904611557,"sequence":5,"source":{"id":"alice-spend-1","kind":"app"},"type":"credits.debited"}
6	evt_7a1b5615206203083eb1908a61514446	com.example.till	bob	credits.purchased	submission	Sandbox	1795904611701	1795904611744	{"balanceChanges":{"gems":100},"bundleId":"com.example.till","createdAt":1795904611744,"customer":{"aliases":[],"balances":{"gems":100},"entitlements":[],"id":"bob"},"environment":"Sandbox","id":"evt_7a1b5615206203083eb1908a61514446","occurredAt":1795904611701,"product":{"entitlements":[],"id":"gems.100","type":"consumable"},"sequence":6,"source":{"id":"2f6f875d-089c-475f-a674-d05e727f0d1b","kind":"submission"},"transaction":{"confirmed":false,"originalTransactionId":"2000000900000002","ownership":"PURCHASED","purchaseDate":1795904611701,"quantity":1,"storefront":"USA","transactionId":"2000000900000002"},"type":"credits.purchased"}
7	evt_c0edc0101e12bc014801431e91400fc4	com.example.till	bob	purchase.confirmed	notification	Sandbox	1795904611730	1795904611744	{"bundleId":"com.example.till","createdAt":1795904611744,"customer":{"aliases":[],"balances":{"gems":100},"entitlements":[],"id":"bob"},"environment":"Sandbox","id":"evt_c0edc0101e12bc014801431e91400fc4","occurredAt":1795904611730,"product":{"entitlements":[],"id":"gems.100","type":"consumable"},"sequence":7,"source":{"id":"7515121a-f094-4850-b23b-9fe05a71b0e6","kind":"notification","notificationType":"ONE_TIME_CHARGE"},"transaction":{"confirmed":true,"originalTransactionId":"2000000900000002","ownership":"PURCHASED","purchaseDate":1795904611701,"quantity":1,"storefront":"USA","transactionId":"2000000900000002"},"type":"purchase.confirmed"}
8	evt_31ba22d6c5abe8db0269c089f77e85ca	com.example.till	bob	credits.debited	app	\N	1795904611852	1795904611857	{"balanceChanges":{"gems":-100},"bundleId":"com.example.till","createdAt":1795904611857,"customer":{"aliases":[],"balances":{"gems":0},"entitlements":[],"id":"bob"},"id":"evt_31ba22d6c5abe8db0269c089f77e85ca","occurredAt":1795904611852,"sequence":8,"source":{"id":"bob-spend-1","kind":"app"},"type":"credits.debited"}
9	evt_8cee4a2b32633903da144ace7f63be6a	com.example.till	carol	access.granted	operator	Production	1795904611885	1795904611889	{"bundleId":"com.example.till","createdAt":1795904611889,"customer":{"aliases":[],"balances":{},"entitlements":[{"environment":"Production","id":"pro","productId":"pro","provisional":false,"transactionId":"grant-b85fab11-dfe1-4596-a014-0011795f816b"}],"id":"carol"},"environment":"Production","id":"evt_8cee4a2b32633903da144ace7f63be6a","occurredAt":1795904611885,"product":{"entitlements":["pro"],"id":"pro","type":"nonConsumable"},"sequence":9,"source":{"kind":"operator","note":"upgrade fixture"},"transaction":{"confirmed":true,"originalTransactionId":"grant-b85fab11-dfe1-4596-a014-0011795f816b","ownership":"PURCHASED","purchaseDate":1795904611885,"quantity":1,"transactionId":"grant-b85fab11-dfe1-4596-a014-0011795f816b"},"type":"access.granted"}
10	evt_25019bb7fb6bc54d89bdb16e3f4f2b81	com.example.till	carol	credits.adjusted	operator	\N	1795904611915	1795904611922	{"balanceChanges":{"gems":5},"bundleId":"com.example.till","createdAt":1795904611922,"customer":{"aliases":[],"balances":{"gems":5},"entitlements":[{"environment":"Production","id":"pro","productId":"pro","provisional":false,"transactionId":"grant-b85fab11-dfe1-4596-a014-0011795f816b"}],"id":"carol"},"id":"evt_25019bb7fb6bc54d89bdb16e3f4f2b81","occurredAt":1795904611915,"sequence":10,"source":{"kind":"operator","note":"upgrade fixture"},"type":"credits.adjusted"}
\.


--
-- Data for Name: srv_figure_changes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_figure_changes (id, bundle_id, environment, measure, day, product_id, currency, amount, entries, original_transaction_id) FROM stdin;
\.


--
-- Data for Name: srv_figures_daily; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_figures_daily (bundle_id, environment, day, measure, product_id, currency, amount, entries) FROM stdin;
com.example.till	Sandbox	20785	purchase	pro	USD	4990	1
com.example.till	Sandbox	20785	purchase	gems.100	USD	2970	2
\.


--
-- Data for Name: srv_figures_subscriptions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_figures_subscriptions (environment, original_transaction_id, bundle_id, product_id, started_at, ends_at, trial, trial_ends_at, converted_at, monthly_amount, currency, periods, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_finance; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_finance (environment, transaction_id, bundle_id, product_id, amount, currency, occurred_at, kind) FROM stdin;
Sandbox	2000000900000000	com.example.till	pro	4990	USD	1795904611161	purchase
Sandbox	2000000900000001	com.example.till	gems.100	1980	USD	1795904611386	purchase
Sandbox	2000000900000002	com.example.till	gems.100	990	USD	1795904611701	purchase
\.


--
-- Data for Name: srv_introductory_overrides; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_introductory_overrides (bundle_id, customer_id, subscription_group, allow_introductory_offer, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_jobs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_jobs (kind, job_key, state, queue_group, stream, "position", attempts, due_at, claimed_until, last_error, created_at, updated_at) FROM stdin;
catchUp	com.example.till	queued		\N	0	1	1795908211032	\N	\N	1795904610978	1795904611032
\.


--
-- Data for Name: srv_notifications; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_notifications (notification_uuid, bundle_id, environment, type, subtype, signed_date, received_at, outcome, transaction_id, original_transaction_id, customer_id, detail, signed_payload, decoded) FROM stdin;
9bbe1cd7-7889-48ab-8fdf-c7583468ba33	com.example.till	Sandbox	ONE_TIME_CHARGE	\N	1795904611163	1795904611184	applied	2000000900000000	2000000900000000	alice	applied when a submission recorded the purchase	\N	{"notification":{"data":{"appAppleId":1957831706,"bundleId":"com.example.till","bundleVersion":"1","environment":"Sandbox"},"notificationType":"ONE_TIME_CHARGE","notificationUUID":"9bbe1cd7-7889-48ab-8fdf-c7583468ba33","signedDate":1795904611163,"version":"2.0"},"transaction":{"appTransactionId":"704212450052136104","bundleId":"com.example.till","currency":"USD","environment":"Sandbox","inAppOwnershipType":"PURCHASED","originalPurchaseDate":1795904611161,"originalTransactionId":"2000000900000000","price":4990,"productId":"pro","purchaseDate":1795904611161,"quantity":1,"signedDate":1795904611163,"storefront":"USA","storefrontId":"143441","transactionId":"2000000900000000","transactionReason":"PURCHASE","type":"Non-Consumable"}}
df760454-44e6-416e-99c8-6394d65cadea	com.example.till	Sandbox	ONE_TIME_CHARGE	\N	1795904611387	1795904611395	applied	2000000900000001	2000000900000001	alice	applied when a submission recorded the purchase	\N	{"notification":{"data":{"appAppleId":1957831706,"bundleId":"com.example.till","bundleVersion":"1","environment":"Sandbox"},"notificationType":"ONE_TIME_CHARGE","notificationUUID":"df760454-44e6-416e-99c8-6394d65cadea","signedDate":1795904611387,"version":"2.0"},"transaction":{"appTransactionId":"704212450052136104","bundleId":"com.example.till","currency":"USD","environment":"Sandbox","inAppOwnershipType":"PURCHASED","originalPurchaseDate":1795904611386,"originalTransactionId":"2000000900000001","price":1980,"productId":"gems.100","purchaseDate":1795904611386,"quantity":2,"signedDate":1795904611387,"storefront":"USA","storefrontId":"143441","transactionId":"2000000900000001","transactionReason":"PURCHASE","type":"Consumable"}}
7515121a-f094-4850-b23b-9fe05a71b0e6	com.example.till	Sandbox	ONE_TIME_CHARGE	\N	1795904611702	1795904611714	applied	2000000900000002	2000000900000002	bob	applied when a submission recorded the purchase	\N	{"notification":{"data":{"appAppleId":1957831706,"bundleId":"com.example.till","bundleVersion":"1","environment":"Sandbox"},"notificationType":"ONE_TIME_CHARGE","notificationUUID":"7515121a-f094-4850-b23b-9fe05a71b0e6","signedDate":1795904611702,"version":"2.0"},"transaction":{"appTransactionId":"704212450052136104","bundleId":"com.example.till","currency":"USD","environment":"Sandbox","inAppOwnershipType":"PURCHASED","originalPurchaseDate":1795904611701,"originalTransactionId":"2000000900000002","price":990,"productId":"gems.100","purchaseDate":1795904611701,"quantity":1,"signedDate":1795904611702,"storefront":"USA","storefrontId":"143441","transactionId":"2000000900000002","transactionReason":"PURCHASE","type":"Consumable"}}
\.


--
-- Data for Name: srv_offers; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_offers (bundle_id, product_id, offer_identifier, eligibility, created_at, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_products; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_products (bundle_id, product_id, type, title, entitlements, credits, content, subscription_group, duration_seconds, price, currency, "position", created_at, updated_at) FROM stdin;
com.example.till	gems.100	consumable	100 Gems	[]	{"gems":100}	[]	\N	\N	990	USD	0	1795904610894	1795904610894
com.example.till	pro	nonConsumable	Pro	["pro"]	{}	[]	\N	\N	4990	USD	1	1795904610900	1795904610900
com.example.till	premium.monthly	autoRenewable	Premium (monthly)	["premium"]	{}	[]	premium	\N	990	USD	2	1795904610907	1795904610907
com.example.till	premium.yearly	autoRenewable	Premium (yearly)	["premium"]	{}	[]	premium	\N	9990	USD	3	1795904610911	1795904610911
com.example.till	season.pass	nonRenewing	Season pass	["season"]	{}	[]	\N	7776000	2990	USD	4	1795904610917	1795904610917
com.example.till	newsletter	freeSubscription	Newsletter	["newsletter"]	{}	[]	\N	\N	\N	\N	5	1795904610923	1795904610923
com.example.till	magazine.1	nonConsumable	Till Monthly, issue 1	["magazine.1"]	{}	[]	\N	\N	1990	USD	6	1795904610929	1795904610929
\.


--
-- Data for Name: srv_settings; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_settings (name, value) FROM stdin;
server.secret	10aa72994df13c2d920adee15e28a5551d2e82b8a98696f19e24d931972793d1
snapshot.private-key	-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKpQNPd0rx2/H2k0P\nrfSsFAUq+tnmRelFeyFW5hTNS3+hRANCAASQtU6DmbHHEfRii7PRBk9N13P+b5Jp\nA33HypIMHuzBS25jRAP4jjinOzPOsG4gr98GEF608AOKYuvAbBRbKEM3\n-----END PRIVATE KEY-----
\.


--
-- Data for Name: srv_submission_attempts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_submission_attempts (submission_id, number, at, environment, outcome, status, error, retry_cause, duration) FROM stdin;
a4141b90-aadb-4e0a-9ec9-9363658ff5d1	1	1795904611406	Sandbox	confirmed	HTTP 200	\N	\N	115
3a9b8599-fb75-4c37-a19e-4d32bdb7d5c6	1	1795904611505	Sandbox	confirmed	HTTP 200	\N	\N	30
2f6f875d-089c-475f-a674-d05e727f0d1b	1	1795904611765	Sandbox	confirmed	HTTP 200	\N	\N	6
\.


--
-- Data for Name: srv_submission_payloads; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_submission_payloads (id, payload) FROM stdin;
a4141b90-aadb-4e0a-9ec9-9363658ff5d1	eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlDWlRDQ0FneWdBd0lCQWdJUUhWcUl4U01HVHhpZVpyWmVsMU85ZVRBS0JnZ3Foa2pPUFFRREFqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3SUJjTk1qQXdNVEF4TURBd01EQXdXaGdQTWpBMk1EQXhNREV3TURBd01EQmFNSUdBTVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNU2N3SlFZRFZRUUREQjVVYVd4c0lGTnBiWFZzWVhSdmNpQlNaV05sYVhCMElGTnBaMjVwYm1jd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUUnM3T3NoNEtwT0VFdEp3alZlWEd0aUNuY09CSjJMUG9zUkw0NExGVk9kV2ZPZjFsc1JNNm9sZnpGRVJDYWp6MzBlQ2NWallmLzdobTl0SGMwOHNDbG8xTXdVVEFNQmdOVkhSTUJBZjhFQWpBQU1BNEdBMVVkRHdFQi93UUVBd0lIZ0RBZkJnTlZIU01FR0RBV2dCU3dnRzlkVnczaEFOczZoNGUrZElEZjZ5OXR2akFRQmdvcWhraUc5Mk5rQmdzQkJBSUZBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvKzVJMGxxQ0Y3VU9KaVhrMFkwT0RrdTJPNDRvMHJvWVFVRUZuRms3MTBBSWdITWV2elhYeS9TQmVHTmNITk4wd0xIdUg1c0F4QVdJU1RVUlpsUXl0Qm4wPSIsIk1JSUNnVENDQWlpZ0F3SUJBZ0lRSi9xOE1ZVGNwSHk1L2Z6R0FQNm5IVEFLQmdncWhrak9QUVFEQWpCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNQ0FYRFRJd01ERXdNVEF3TURBd01Gb1lEekl3TmpReE1qTXhNRFl3TURBd1dqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVNiZkhBMGsveGlHbXZwQnpIWEtvMVVDL043OGkxUnZZTkZVWFlrNEFLZXB5U2lDQzlkaXZXVXloa09vK2VPMEZ1VzE1N1ZGY3kwQjNaTGl6Z0hRMHF6bzNnd2RqQVNCZ05WSFJNQkFmOEVDREFHQVFIL0FnRUFNQTRHQTFVZER3RUIvd1FFQXdJQkJqQWRCZ05WSFE0RUZnUVVzSUJ2WFZjTjRRRGJPb2VIdm5TQTMrc3ZiYjR3SHdZRFZSMGpCQmd3Rm9BVWRtSitheFZ0bWlHUjFDbHVKZmFjRUtRd1Zia3dFQVlLS29aSWh2ZGpaQVlDQVFRQ0JRQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdBb1hxQVZ1V3AwZVlBZFdZa3p0UTh2VmxPanN2S3BrUFA2RjJhOTRqaTlnQ0lEaUY5eEdwRzZuTnVXQ2VnMm5vT25MdlFIYmJwU21qQmoxS0NRRWhwdFpFIiwiTUlJQ016Q0NBZGlnQXdJQkFnSVFiWlE5VGUvendzNHp0ZzJiYU9RTkV6QUtCZ2dxaGtqT1BRUURBakI0TVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNUjh3SFFZRFZRUUREQlpVYVd4c0lGTnBiWFZzWVhSdmNpQlNiMjkwSUVOQk1DQVhEVEl3TURFd01UQXdNREF3TUZvWUR6SXdOamt4TWpNeE1USXdNREF3V2pCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVtQzJLT2VBZzZDTTRXcFRCeEIrQXV3MGRHVVZaamxzZU9zdG05YW9Oc0Y1a1Y2clVxbW1RNzRzQWZtMlFoU2dONnJoQTVuQklhbmlKb1ZXL1FpaTZDNk5DTUVBd0R3WURWUjBUQVFIL0JBVXdBd0VCL3pBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhaaWZtc1ZiWm9oa2RRcGJpWDJuQkNrTUZXNU1Bb0dDQ3FHU000OUJBTUNBMGtBTUVZQ0lRQ3UrVllGaTlmcmU1Y21XWlB2OUVFRTdXWHk1WEZoRVU0dHZvaVd2STBVQUFJaEFPRGJub09wblJOcVZWdjBMRTlHRWFTQTd4QU5WdDdWbU5UTndnMnRlWUs5Il19.eyJhcHBUcmFuc2FjdGlvbklkIjoiNzA0MjEyNDUwMDUyMTM2MTA0IiwiYnVuZGxlSWQiOiJjb20uZXhhbXBsZS50aWxsIiwiY3VycmVuY3kiOiJVU0QiLCJlbnZpcm9ubWVudCI6IlNhbmRib3giLCJpbkFwcE93bmVyc2hpcFR5cGUiOiJQVVJDSEFTRUQiLCJvcmlnaW5hbFB1cmNoYXNlRGF0ZSI6MTc5NTkwNDYxMTE2MSwib3JpZ2luYWxUcmFuc2FjdGlvbklkIjoiMjAwMDAwMDkwMDAwMDAwMCIsInByaWNlIjo0OTkwLCJwcm9kdWN0SWQiOiJwcm8iLCJwdXJjaGFzZURhdGUiOjE3OTU5MDQ2MTExNjEsInF1YW50aXR5IjoxLCJzaWduZWREYXRlIjoxNzk1OTA0NjExMTY4LCJzdG9yZWZyb250IjoiVVNBIiwic3RvcmVmcm9udElkIjoiMTQzNDQxIiwidHJhbnNhY3Rpb25JZCI6IjIwMDAwMDA5MDAwMDAwMDAiLCJ0cmFuc2FjdGlvblJlYXNvbiI6IlBVUkNIQVNFIiwidHlwZSI6Ik5vbi1Db25zdW1hYmxlIn0.V4E8QuiT41ucFVZRVtmJNm--KjzAXgtS75-VMk_T4rmuaB4PwUFa2sEsl-EygTeca7Tf-NG8vD94culEA1Nuwg
3a9b8599-fb75-4c37-a19e-4d32bdb7d5c6	eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlDWlRDQ0FneWdBd0lCQWdJUUhWcUl4U01HVHhpZVpyWmVsMU85ZVRBS0JnZ3Foa2pPUFFRREFqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3SUJjTk1qQXdNVEF4TURBd01EQXdXaGdQTWpBMk1EQXhNREV3TURBd01EQmFNSUdBTVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNU2N3SlFZRFZRUUREQjVVYVd4c0lGTnBiWFZzWVhSdmNpQlNaV05sYVhCMElGTnBaMjVwYm1jd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUUnM3T3NoNEtwT0VFdEp3alZlWEd0aUNuY09CSjJMUG9zUkw0NExGVk9kV2ZPZjFsc1JNNm9sZnpGRVJDYWp6MzBlQ2NWallmLzdobTl0SGMwOHNDbG8xTXdVVEFNQmdOVkhSTUJBZjhFQWpBQU1BNEdBMVVkRHdFQi93UUVBd0lIZ0RBZkJnTlZIU01FR0RBV2dCU3dnRzlkVnczaEFOczZoNGUrZElEZjZ5OXR2akFRQmdvcWhraUc5Mk5rQmdzQkJBSUZBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvKzVJMGxxQ0Y3VU9KaVhrMFkwT0RrdTJPNDRvMHJvWVFVRUZuRms3MTBBSWdITWV2elhYeS9TQmVHTmNITk4wd0xIdUg1c0F4QVdJU1RVUlpsUXl0Qm4wPSIsIk1JSUNnVENDQWlpZ0F3SUJBZ0lRSi9xOE1ZVGNwSHk1L2Z6R0FQNm5IVEFLQmdncWhrak9QUVFEQWpCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNQ0FYRFRJd01ERXdNVEF3TURBd01Gb1lEekl3TmpReE1qTXhNRFl3TURBd1dqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVNiZkhBMGsveGlHbXZwQnpIWEtvMVVDL043OGkxUnZZTkZVWFlrNEFLZXB5U2lDQzlkaXZXVXloa09vK2VPMEZ1VzE1N1ZGY3kwQjNaTGl6Z0hRMHF6bzNnd2RqQVNCZ05WSFJNQkFmOEVDREFHQVFIL0FnRUFNQTRHQTFVZER3RUIvd1FFQXdJQkJqQWRCZ05WSFE0RUZnUVVzSUJ2WFZjTjRRRGJPb2VIdm5TQTMrc3ZiYjR3SHdZRFZSMGpCQmd3Rm9BVWRtSitheFZ0bWlHUjFDbHVKZmFjRUtRd1Zia3dFQVlLS29aSWh2ZGpaQVlDQVFRQ0JRQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdBb1hxQVZ1V3AwZVlBZFdZa3p0UTh2VmxPanN2S3BrUFA2RjJhOTRqaTlnQ0lEaUY5eEdwRzZuTnVXQ2VnMm5vT25MdlFIYmJwU21qQmoxS0NRRWhwdFpFIiwiTUlJQ016Q0NBZGlnQXdJQkFnSVFiWlE5VGUvendzNHp0ZzJiYU9RTkV6QUtCZ2dxaGtqT1BRUURBakI0TVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNUjh3SFFZRFZRUUREQlpVYVd4c0lGTnBiWFZzWVhSdmNpQlNiMjkwSUVOQk1DQVhEVEl3TURFd01UQXdNREF3TUZvWUR6SXdOamt4TWpNeE1USXdNREF3V2pCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVtQzJLT2VBZzZDTTRXcFRCeEIrQXV3MGRHVVZaamxzZU9zdG05YW9Oc0Y1a1Y2clVxbW1RNzRzQWZtMlFoU2dONnJoQTVuQklhbmlKb1ZXL1FpaTZDNk5DTUVBd0R3WURWUjBUQVFIL0JBVXdBd0VCL3pBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhaaWZtc1ZiWm9oa2RRcGJpWDJuQkNrTUZXNU1Bb0dDQ3FHU000OUJBTUNBMGtBTUVZQ0lRQ3UrVllGaTlmcmU1Y21XWlB2OUVFRTdXWHk1WEZoRVU0dHZvaVd2STBVQUFJaEFPRGJub09wblJOcVZWdjBMRTlHRWFTQTd4QU5WdDdWbU5UTndnMnRlWUs5Il19.eyJhcHBUcmFuc2FjdGlvbklkIjoiNzA0MjEyNDUwMDUyMTM2MTA0IiwiYnVuZGxlSWQiOiJjb20uZXhhbXBsZS50aWxsIiwiY3VycmVuY3kiOiJVU0QiLCJlbnZpcm9ubWVudCI6IlNhbmRib3giLCJpbkFwcE93bmVyc2hpcFR5cGUiOiJQVVJDSEFTRUQiLCJvcmlnaW5hbFB1cmNoYXNlRGF0ZSI6MTc5NTkwNDYxMTM4Niwib3JpZ2luYWxUcmFuc2FjdGlvbklkIjoiMjAwMDAwMDkwMDAwMDAwMSIsInByaWNlIjoxOTgwLCJwcm9kdWN0SWQiOiJnZW1zLjEwMCIsInB1cmNoYXNlRGF0ZSI6MTc5NTkwNDYxMTM4NiwicXVhbnRpdHkiOjIsInNpZ25lZERhdGUiOjE3OTU5MDQ2MTEzODksInN0b3JlZnJvbnQiOiJVU0EiLCJzdG9yZWZyb250SWQiOiIxNDM0NDEiLCJ0cmFuc2FjdGlvbklkIjoiMjAwMDAwMDkwMDAwMDAwMSIsInRyYW5zYWN0aW9uUmVhc29uIjoiUFVSQ0hBU0UiLCJ0eXBlIjoiQ29uc3VtYWJsZSJ9.tEY7UjTLpmEAeCjnrCZPZOjKyX3YxLfOLEXaPDsnCeTBvRKTpD8ogHFeSaXcoZLBUt4nDJTw8SNhExiv85do0Q
2f6f875d-089c-475f-a674-d05e727f0d1b	eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlDWlRDQ0FneWdBd0lCQWdJUUhWcUl4U01HVHhpZVpyWmVsMU85ZVRBS0JnZ3Foa2pPUFFRREFqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3SUJjTk1qQXdNVEF4TURBd01EQXdXaGdQTWpBMk1EQXhNREV3TURBd01EQmFNSUdBTVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNU2N3SlFZRFZRUUREQjVVYVd4c0lGTnBiWFZzWVhSdmNpQlNaV05sYVhCMElGTnBaMjVwYm1jd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUUnM3T3NoNEtwT0VFdEp3alZlWEd0aUNuY09CSjJMUG9zUkw0NExGVk9kV2ZPZjFsc1JNNm9sZnpGRVJDYWp6MzBlQ2NWallmLzdobTl0SGMwOHNDbG8xTXdVVEFNQmdOVkhSTUJBZjhFQWpBQU1BNEdBMVVkRHdFQi93UUVBd0lIZ0RBZkJnTlZIU01FR0RBV2dCU3dnRzlkVnczaEFOczZoNGUrZElEZjZ5OXR2akFRQmdvcWhraUc5Mk5rQmdzQkJBSUZBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvKzVJMGxxQ0Y3VU9KaVhrMFkwT0RrdTJPNDRvMHJvWVFVRUZuRms3MTBBSWdITWV2elhYeS9TQmVHTmNITk4wd0xIdUg1c0F4QVdJU1RVUlpsUXl0Qm4wPSIsIk1JSUNnVENDQWlpZ0F3SUJBZ0lRSi9xOE1ZVGNwSHk1L2Z6R0FQNm5IVEFLQmdncWhrak9QUVFEQWpCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNQ0FYRFRJd01ERXdNVEF3TURBd01Gb1lEekl3TmpReE1qTXhNRFl3TURBd1dqQ0JrVEVMTUFrR0ExVUVCaE1DVlZNeEZ6QVZCZ05WQkFvTURsUnBiR3dnVTJsdGRXeGhkRzl5TVM4d0xRWURWUVFMRENaVWFXeHNJRk5wYlhWc1lYUnZjaUJEWlhKMGFXWnBZMkYwYVc5dUlFRjFkR2h2Y21sMGVURTRNRFlHQTFVRUF3d3ZWR2xzYkNCVGFXMTFiR0YwYjNJZ1YyOXliR1IzYVdSbElFUmxkbVZzYjNCbGNpQlNaV3hoZEdsdmJuTWdRMEV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVNiZkhBMGsveGlHbXZwQnpIWEtvMVVDL043OGkxUnZZTkZVWFlrNEFLZXB5U2lDQzlkaXZXVXloa09vK2VPMEZ1VzE1N1ZGY3kwQjNaTGl6Z0hRMHF6bzNnd2RqQVNCZ05WSFJNQkFmOEVDREFHQVFIL0FnRUFNQTRHQTFVZER3RUIvd1FFQXdJQkJqQWRCZ05WSFE0RUZnUVVzSUJ2WFZjTjRRRGJPb2VIdm5TQTMrc3ZiYjR3SHdZRFZSMGpCQmd3Rm9BVWRtSitheFZ0bWlHUjFDbHVKZmFjRUtRd1Zia3dFQVlLS29aSWh2ZGpaQVlDQVFRQ0JRQXdDZ1lJS29aSXpqMEVBd0lEUndBd1JBSWdBb1hxQVZ1V3AwZVlBZFdZa3p0UTh2VmxPanN2S3BrUFA2RjJhOTRqaTlnQ0lEaUY5eEdwRzZuTnVXQ2VnMm5vT25MdlFIYmJwU21qQmoxS0NRRWhwdFpFIiwiTUlJQ016Q0NBZGlnQXdJQkFnSVFiWlE5VGUvendzNHp0ZzJiYU9RTkV6QUtCZ2dxaGtqT1BRUURBakI0TVFzd0NRWURWUVFHRXdKVlV6RVhNQlVHQTFVRUNnd09WR2xzYkNCVGFXMTFiR0YwYjNJeEx6QXRCZ05WQkFzTUpsUnBiR3dnVTJsdGRXeGhkRzl5SUVObGNuUnBabWxqWVhScGIyNGdRWFYwYUc5eWFYUjVNUjh3SFFZRFZRUUREQlpVYVd4c0lGTnBiWFZzWVhSdmNpQlNiMjkwSUVOQk1DQVhEVEl3TURFd01UQXdNREF3TUZvWUR6SXdOamt4TWpNeE1USXdNREF3V2pCNE1Rc3dDUVlEVlFRR0V3SlZVekVYTUJVR0ExVUVDZ3dPVkdsc2JDQlRhVzExYkdGMGIzSXhMekF0QmdOVkJBc01KbFJwYkd3Z1UybHRkV3hoZEc5eUlFTmxjblJwWm1sallYUnBiMjRnUVhWMGFHOXlhWFI1TVI4d0hRWURWUVFEREJaVWFXeHNJRk5wYlhWc1lYUnZjaUJTYjI5MElFTkJNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVtQzJLT2VBZzZDTTRXcFRCeEIrQXV3MGRHVVZaamxzZU9zdG05YW9Oc0Y1a1Y2clVxbW1RNzRzQWZtMlFoU2dONnJoQTVuQklhbmlKb1ZXL1FpaTZDNk5DTUVBd0R3WURWUjBUQVFIL0JBVXdBd0VCL3pBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhaaWZtc1ZiWm9oa2RRcGJpWDJuQkNrTUZXNU1Bb0dDQ3FHU000OUJBTUNBMGtBTUVZQ0lRQ3UrVllGaTlmcmU1Y21XWlB2OUVFRTdXWHk1WEZoRVU0dHZvaVd2STBVQUFJaEFPRGJub09wblJOcVZWdjBMRTlHRWFTQTd4QU5WdDdWbU5UTndnMnRlWUs5Il19.eyJhcHBUcmFuc2FjdGlvbklkIjoiNzA0MjEyNDUwMDUyMTM2MTA0IiwiYnVuZGxlSWQiOiJjb20uZXhhbXBsZS50aWxsIiwiY3VycmVuY3kiOiJVU0QiLCJlbnZpcm9ubWVudCI6IlNhbmRib3giLCJpbkFwcE93bmVyc2hpcFR5cGUiOiJQVVJDSEFTRUQiLCJvcmlnaW5hbFB1cmNoYXNlRGF0ZSI6MTc5NTkwNDYxMTcwMSwib3JpZ2luYWxUcmFuc2FjdGlvbklkIjoiMjAwMDAwMDkwMDAwMDAwMiIsInByaWNlIjo5OTAsInByb2R1Y3RJZCI6ImdlbXMuMTAwIiwicHVyY2hhc2VEYXRlIjoxNzk1OTA0NjExNzAxLCJxdWFudGl0eSI6MSwic2lnbmVkRGF0ZSI6MTc5NTkwNDYxMTcwNSwic3RvcmVmcm9udCI6IlVTQSIsInN0b3JlZnJvbnRJZCI6IjE0MzQ0MSIsInRyYW5zYWN0aW9uSWQiOiIyMDAwMDAwOTAwMDAwMDAyIiwidHJhbnNhY3Rpb25SZWFzb24iOiJQVVJDSEFTRSIsInR5cGUiOiJDb25zdW1hYmxlIn0.BuhLNCwW-5qyeKXFAR-ZSyujkxr2Xesyccs06oXEaK_L2hi4N1z7xCsjBQhAXf_bW-fayBscUjG5BMRRAnKF4w
\.


--
-- Data for Name: srv_submissions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_submissions (id, bundle_id, customer_id, idempotency_key, kind, environment, state, attempts, last_status, last_error, reason, transaction_ids, created_at, updated_at, confirmed_at, retry_cause) FROM stdin;
a4141b90-aadb-4e0a-9ec9-9363658ff5d1	com.example.till	alice	tx-2000000900000000-3744b6810d2fb8234ea36ab8	signedTransaction	Sandbox	confirmed	1	HTTP 200	\N	\N	["2000000900000000"]	1795904611249	1795904611406	1795904611406	\N
3a9b8599-fb75-4c37-a19e-4d32bdb7d5c6	com.example.till	alice	tx-2000000900000001-083e06840753cbffe126ef14	signedTransaction	Sandbox	confirmed	1	HTTP 200	\N	\N	["2000000900000001"]	1795904611403	1795904611505	1795904611505	\N
2f6f875d-089c-475f-a674-d05e727f0d1b	com.example.till	bob	tx-2000000900000002-9c21c2c318c2e80e59eee7ff	signedTransaction	Sandbox	confirmed	1	HTTP 200	\N	\N	["2000000900000002"]	1795904611717	1795904611765	1795904611765	\N
\.


--
-- Data for Name: srv_subscription_states; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_subscription_states (environment, original_transaction_id, bundle_id, product_id, auto_renew_product_id, auto_renew_status, status, is_in_billing_retry, grace_period_expires_date, expiration_intent, renewal_date, price_increase_status, last_notification_type, signed_date, updated_at, billing_plan_type, currency, commitment_renewal_date, commitment_auto_renew_status, commitment_auto_renew_product_id, commitment_renewal_billing_plan_type, commitment_renewal_price) FROM stdin;
\.


--
-- Data for Name: srv_transactions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_transactions (environment, transaction_id, bundle_id, customer_id, original_transaction_id, product_id, product_type, quantity, purchase_date, expires_date, revocation_date, revocation_reason, is_upgraded, ownership, price, currency, storefront, web_order_line_item_id, submission_id, confirmed, created_at, updated_at, introductory_offer, billing_plan_type, commitment_period, commitment_periods, commitment_expires_date, revocation_detail, source) FROM stdin;
Sandbox	2000000900000000	com.example.till	alice	2000000900000000	pro	nonConsumable	1	1795904611161	\N	\N	\N	f	PURCHASED	4990	USD	USA	\N	a4141b90-aadb-4e0a-9ec9-9363658ff5d1	t	1795904611255	1795904611262	f	\N	\N	\N	\N	\N	submission
Sandbox	2000000900000001	com.example.till	alice	2000000900000001	gems.100	consumable	2	1795904611386	\N	\N	\N	f	PURCHASED	1980	USD	USA	\N	3a9b8599-fb75-4c37-a19e-4d32bdb7d5c6	t	1795904611412	1795904611420	f	\N	\N	\N	\N	\N	submission
Sandbox	2000000900000002	com.example.till	bob	2000000900000002	gems.100	consumable	1	1795904611701	\N	\N	\N	f	PURCHASED	990	USD	USA	\N	2f6f875d-089c-475f-a674-d05e727f0d1b	t	1795904611725	1795904611730	f	\N	\N	\N	\N	\N	submission
Production	grant-b85fab11-dfe1-4596-a014-0011795f816b	com.example.till	carol	grant-b85fab11-dfe1-4596-a014-0011795f816b	pro	nonConsumable	1	1795904611885	\N	\N	\N	f	PURCHASED	\N	USD	\N	\N	operator:grant-b85fab11-dfe1-4596-a014-0011795f816b	t	1795904611885	1795904611885	f	\N	\N	\N	\N	\N	operator
\.


--
-- Data for Name: srv_webhook_attempts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_webhook_attempts (delivery_id, attempt, at, url, status, answer, error, duration) FROM stdin;
\.


--
-- Data for Name: srv_webhook_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_webhook_deliveries (id, endpoint_id, bundle_id, event_sequence, event_id, event_type, customer_id, state, attempts, replay, deadline, delivered_at, last_attempt_at, last_status, last_error, last_answer, last_url, last_duration, created_at, updated_at) FROM stdin;
\.


--
-- Data for Name: srv_webhook_endpoints; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.srv_webhook_endpoints (id, bundle_id, url, description, event_types, enabled, secret, previous_secret, previous_secret_expires_at, dispatched_through, consecutive_failures, last_success_at, last_failure_at, created_at, updated_at, dispatcher, dispatcher_until) FROM stdin;
\.


--
-- Data for Name: till_schema_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.till_schema_migrations (schema, id, applied_at) FROM stdin;
server	001-core	1795904610669
server	003-content	1795904610674
server	004-notifications	1795904610681
server	005-submission-payloads	1795904610688
server	006-partial-idempotency-index	1795904610694
server	007-tables-stored-by-key	1795904610697
server	008-customer-guests	1795904610700
server	009-retry-causes	1795904610705
server	010-waiting-notifications	1795904610712
server	011-submission-pages	1795904610717
server	012-catch-up	1795904610724
server	013-consumption-answers	1795904610733
server	014-offers	1795904610742
server	015-storekit-testing	1795904610746
server	016-commitment-plans	1795904610758
server	017-typed-ledger-sqlite	1795904610763
server	017-typed-ledger-postgres	1795904610775
server	018-jobs-sqlite	1795904610778
server	018-jobs-postgres	1795904610791
server	019-events	1795904610811
server	020-console-sqlite	1795904610814
server	020-console-postgres	1795904610843
server	021-app-transactions	1795904610848
server	022-webhook-dispatcher	1795904610853
server	023-balances-and-holdings	1795904610861
\.


--
-- Name: srv_figure_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.srv_figure_changes_id_seq', 3, true);


--
-- Name: srv_app_transactions srv_app_transactions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_app_transactions
    ADD CONSTRAINT srv_app_transactions_pkey PRIMARY KEY (bundle_id, customer_id);


--
-- Name: srv_apps srv_apps_app_key_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_apps
    ADD CONSTRAINT srv_apps_app_key_key UNIQUE (app_key);


--
-- Name: srv_apps srv_apps_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_apps
    ADD CONSTRAINT srv_apps_pkey PRIMARY KEY (bundle_id);


--
-- Name: srv_balance_entries srv_balance_entries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_balance_entries
    ADD CONSTRAINT srv_balance_entries_pkey PRIMARY KEY (bundle_id, reference, credit);


--
-- Name: srv_balances srv_balances_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_balances
    ADD CONSTRAINT srv_balances_pkey PRIMARY KEY (bundle_id, customer_id, credit);


--
-- Name: srv_catch_up_checkpoints srv_catch_up_checkpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_catch_up_checkpoints
    ADD CONSTRAINT srv_catch_up_checkpoints_pkey PRIMARY KEY (bundle_id, environment);


--
-- Name: srv_catch_up_purchases srv_catch_up_purchases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_catch_up_purchases
    ADD CONSTRAINT srv_catch_up_purchases_pkey PRIMARY KEY (bundle_id, environment, original_transaction_id);


--
-- Name: srv_catch_up_runs srv_catch_up_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_catch_up_runs
    ADD CONSTRAINT srv_catch_up_runs_pkey PRIMARY KEY (bundle_id);


--
-- Name: srv_console_actions srv_console_actions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_console_actions
    ADD CONSTRAINT srv_console_actions_pkey PRIMARY KEY (id);


--
-- Name: srv_console_sessions srv_console_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_console_sessions
    ADD CONSTRAINT srv_console_sessions_pkey PRIMARY KEY (token_hash);


--
-- Name: srv_consumption_consents srv_consumption_consents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_consumption_consents
    ADD CONSTRAINT srv_consumption_consents_pkey PRIMARY KEY (bundle_id, customer_id);


--
-- Name: srv_consumption_requests srv_consumption_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_consumption_requests
    ADD CONSTRAINT srv_consumption_requests_pkey PRIMARY KEY (notification_uuid);


--
-- Name: srv_customer_activity srv_customer_activity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_customer_activity
    ADD CONSTRAINT srv_customer_activity_pkey PRIMARY KEY (id);


--
-- Name: srv_customers srv_customers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_customers
    ADD CONSTRAINT srv_customers_pkey PRIMARY KEY (bundle_id, customer_id);


--
-- Name: srv_events srv_events_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_events
    ADD CONSTRAINT srv_events_id_key UNIQUE (id);


--
-- Name: srv_events srv_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_events
    ADD CONSTRAINT srv_events_pkey PRIMARY KEY (sequence);


--
-- Name: srv_figure_changes srv_figure_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_figure_changes
    ADD CONSTRAINT srv_figure_changes_pkey PRIMARY KEY (id);


--
-- Name: srv_figures_daily srv_figures_daily_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_figures_daily
    ADD CONSTRAINT srv_figures_daily_pkey PRIMARY KEY (bundle_id, environment, day, measure, product_id, currency);


--
-- Name: srv_figures_subscriptions srv_figures_subscriptions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_figures_subscriptions
    ADD CONSTRAINT srv_figures_subscriptions_pkey PRIMARY KEY (environment, original_transaction_id);


--
-- Name: srv_finance srv_finance_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_finance
    ADD CONSTRAINT srv_finance_pkey PRIMARY KEY (environment, transaction_id, kind);


--
-- Name: srv_introductory_overrides srv_introductory_overrides_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_introductory_overrides
    ADD CONSTRAINT srv_introductory_overrides_pkey PRIMARY KEY (bundle_id, customer_id, subscription_group);


--
-- Name: srv_jobs srv_jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_jobs
    ADD CONSTRAINT srv_jobs_pkey PRIMARY KEY (kind, job_key);


--
-- Name: srv_notifications srv_notifications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_notifications
    ADD CONSTRAINT srv_notifications_pkey PRIMARY KEY (notification_uuid);


--
-- Name: srv_offers srv_offers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_offers
    ADD CONSTRAINT srv_offers_pkey PRIMARY KEY (bundle_id, product_id, offer_identifier);


--
-- Name: srv_products srv_products_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_products
    ADD CONSTRAINT srv_products_pkey PRIMARY KEY (bundle_id, product_id);


--
-- Name: srv_settings srv_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_settings
    ADD CONSTRAINT srv_settings_pkey PRIMARY KEY (name);


--
-- Name: srv_submission_attempts srv_submission_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_submission_attempts
    ADD CONSTRAINT srv_submission_attempts_pkey PRIMARY KEY (submission_id, number);


--
-- Name: srv_submission_payloads srv_submission_payloads_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_submission_payloads
    ADD CONSTRAINT srv_submission_payloads_pkey PRIMARY KEY (id);


--
-- Name: srv_submissions srv_submissions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_submissions
    ADD CONSTRAINT srv_submissions_pkey PRIMARY KEY (id);


--
-- Name: srv_subscription_states srv_subscription_states_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_subscription_states
    ADD CONSTRAINT srv_subscription_states_pkey PRIMARY KEY (environment, original_transaction_id);


--
-- Name: srv_transactions srv_transactions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_transactions
    ADD CONSTRAINT srv_transactions_pkey PRIMARY KEY (environment, transaction_id);


--
-- Name: srv_webhook_attempts srv_webhook_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_webhook_attempts
    ADD CONSTRAINT srv_webhook_attempts_pkey PRIMARY KEY (delivery_id, attempt);


--
-- Name: srv_webhook_deliveries srv_webhook_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_webhook_deliveries
    ADD CONSTRAINT srv_webhook_deliveries_pkey PRIMARY KEY (id);


--
-- Name: srv_webhook_endpoints srv_webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_webhook_endpoints
    ADD CONSTRAINT srv_webhook_endpoints_pkey PRIMARY KEY (id);


--
-- Name: till_schema_migrations till_schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.till_schema_migrations
    ADD CONSTRAINT till_schema_migrations_pkey PRIMARY KEY (schema, id);


--
-- Name: srv_balance_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_balance_customer ON public.srv_balance_entries USING btree (bundle_id, customer_id, credit);


--
-- Name: srv_console_actions_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_console_actions_time ON public.srv_console_actions USING btree (at, id);


--
-- Name: srv_consumption_requests_app; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_consumption_requests_app ON public.srv_consumption_requests USING btree (bundle_id, created_at, notification_uuid);


--
-- Name: srv_consumption_requests_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_consumption_requests_customer ON public.srv_consumption_requests USING btree (bundle_id, customer_id, requested_at);


--
-- Name: srv_customer_activity_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_customer_activity_customer ON public.srv_customer_activity USING btree (bundle_id, customer_id, at);


--
-- Name: srv_customers_alias; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_customers_alias ON public.srv_customers USING btree (bundle_id, alias_of);


--
-- Name: srv_events_app; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_events_app ON public.srv_events USING btree (bundle_id, sequence);


--
-- Name: srv_events_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_events_customer ON public.srv_events USING btree (bundle_id, customer_id, sequence);


--
-- Name: srv_events_recorded; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_events_recorded ON public.srv_events USING btree (bundle_id, created_at);


--
-- Name: srv_figures_subscriptions_ends; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_figures_subscriptions_ends ON public.srv_figures_subscriptions USING btree (bundle_id, environment, ends_at, started_at, currency, monthly_amount);


--
-- Name: srv_figures_subscriptions_starts; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_figures_subscriptions_starts ON public.srv_figures_subscriptions USING btree (bundle_id, environment, started_at, trial);


--
-- Name: srv_figures_subscriptions_trials; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_figures_subscriptions_trials ON public.srv_figures_subscriptions USING btree (bundle_id, environment, trial_ends_at, converted_at) WHERE trial;


--
-- Name: srv_finance_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_finance_time ON public.srv_finance USING btree (bundle_id, occurred_at);


--
-- Name: srv_jobs_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_jobs_due ON public.srv_jobs USING btree (kind, queue_group, state, due_at, "position");


--
-- Name: srv_jobs_next; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_jobs_next ON public.srv_jobs USING btree (kind, state, due_at);


--
-- Name: srv_jobs_stream; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_jobs_stream ON public.srv_jobs USING btree (kind, stream, "position") WHERE (stream IS NOT NULL);


--
-- Name: srv_notifications_applied_transaction; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_applied_transaction ON public.srv_notifications USING btree (environment, transaction_id) WHERE (outcome = 'applied'::text);


--
-- Name: srv_notifications_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_customer ON public.srv_notifications USING btree (bundle_id, customer_id, received_at);


--
-- Name: srv_notifications_outcome; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_outcome ON public.srv_notifications USING btree (bundle_id, outcome, received_at);


--
-- Name: srv_notifications_received; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_received ON public.srv_notifications USING btree (bundle_id, received_at);


--
-- Name: srv_notifications_type; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_type ON public.srv_notifications USING btree (bundle_id, type, received_at);


--
-- Name: srv_notifications_unmatched; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_notifications_unmatched ON public.srv_notifications USING btree (environment, original_transaction_id) WHERE (outcome = 'unmatched'::text);


--
-- Name: srv_submissions_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_submissions_customer ON public.srv_submissions USING btree (bundle_id, customer_id, created_at);


--
-- Name: srv_submissions_idempotency; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX srv_submissions_idempotency ON public.srv_submissions USING btree (bundle_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: srv_submissions_retrying; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_submissions_retrying ON public.srv_submissions USING btree (retry_cause, bundle_id) WHERE (state = 'retrying'::text);


--
-- Name: srv_submissions_state_updated; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_submissions_state_updated ON public.srv_submissions USING btree (state, updated_at, id);


--
-- Name: srv_transactions_customer; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_transactions_customer ON public.srv_transactions USING btree (bundle_id, customer_id, product_type, purchase_date);


--
-- Name: srv_transactions_original; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_transactions_original ON public.srv_transactions USING btree (environment, original_transaction_id);


--
-- Name: srv_transactions_submission; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_transactions_submission ON public.srv_transactions USING btree (submission_id);


--
-- Name: srv_webhook_deliveries_deadline; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_webhook_deliveries_deadline ON public.srv_webhook_deliveries USING btree (deadline) WHERE (state = 'pending'::text);


--
-- Name: srv_webhook_deliveries_endpoint; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_webhook_deliveries_endpoint ON public.srv_webhook_deliveries USING btree (endpoint_id, created_at, id);


--
-- Name: srv_webhook_deliveries_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_webhook_deliveries_state ON public.srv_webhook_deliveries USING btree (endpoint_id, state, created_at, id);


--
-- Name: srv_webhook_endpoints_app; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX srv_webhook_endpoints_app ON public.srv_webhook_endpoints USING btree (bundle_id, created_at, id);


--
-- Name: srv_products srv_products_bundle_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_products
    ADD CONSTRAINT srv_products_bundle_id_fkey FOREIGN KEY (bundle_id) REFERENCES public.srv_apps(bundle_id);


--
-- Name: srv_webhook_endpoints srv_webhook_endpoints_bundle_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.srv_webhook_endpoints
    ADD CONSTRAINT srv_webhook_endpoints_bundle_id_fkey FOREIGN KEY (bundle_id) REFERENCES public.srv_apps(bundle_id);


--
-- PostgreSQL database dump complete
--

\unrestrict eu1lp6RhmeIYm6kRKWF4MePgeKXHhMdCsREP6V0sWD3SYxRBRHUQpVJWTs2kCfm

