import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The OpenAPI 3.1 description of the server's HTTP API, served at `GET /openapi.yaml`.
///
/// Written by hand next to the routes it describes. `OpenAPITests` calls every operation it lists against the
/// router and compares its paths with the routes the router registers, so a route added without documenting it (or
/// documented without existing) fails the tests.
enum OpenAPIDocument {
    /// The document, in YAML.
    static let yaml = #"""
        openapi: 3.1.0
        info:
          title: Till
          version: "1"
          summary: A self-hosted in-app purchase backend.
          description: |
            The HTTP API of `till serve` (docs/api.md, docs/content.md, docs/notifications.md).

            - The app API under `/v1` takes the app's key: `Authorization: Bearer tk_…`.
            - The admin API under `/admin/v1` takes the operator token: `Authorization: Bearer <operator token>`.
            - Apple's notifications (`POST /v1/apple/notifications`) and download links (`/v1/content/…`) carry their
              own signatures and take no key.

            Every refusal is JSON: `{"error":{"code":"…","message":"…"}}`, with a stable `code` to branch on. A path
            the server does not route answers 404 with the code `notFound`; a known path asked with a method it
            does not take answers 405 with the code `methodNotAllowed` and an `Allow` header. Times are UNIX milliseconds
            unless said otherwise; amounts are milliunits (2990 is 2.99). Fields that have no value are left out of
            answers, never sent as `null`. Every answer carries an `X-Request-Id` header: the caller's own when it
            sends a sane one (1–128 letters, digits, `-`, `_`, `.`), otherwise a new one.
        tags:
          - name: operations
            description: Health, metrics and this document.
          - name: app
            description: Called by an app (or its backend) with the app's key.
          - name: admin
            description: Called by the operator with the operator token.
          - name: content
            description: Files delivered with products, and their signed download links.
          - name: notifications
            description: App Store Server Notifications V2.

        paths:
          /health:
            get:
              tags: [operations]
              operationId: health
              summary: Liveness
              security: []
              responses:
                '200':
                  description: The server is up.
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [status]
                        properties:
                          status:
                            type: string
                            const: ok
          /metrics:
            get:
              tags: [operations]
              operationId: metrics
              summary: Prometheus metrics
              description: The metrics of docs/api.md in the Prometheus text format 0.0.4; queue gauges are read
                from the database at each scrape.
              security: []
              responses:
                '200':
                  description: The exposition.
                  content:
                    text/plain; version=0.0.4; charset=utf-8:
                      schema:
                        type: string
                '500':
                  $ref: '#/components/responses/InternalError'
          /openapi.yaml:
            get:
              tags: [operations]
              operationId: openAPIDocument
              summary: This document
              security: []
              parameters:
                - $ref: '#/components/parameters/IfNoneMatch'
              responses:
                '200':
                  description: The OpenAPI 3.1 document of the API.
                  headers:
                    ETag:
                      $ref: '#/components/headers/ETag'
                    Cache-Control:
                      description: '`no-cache`'
                      schema:
                        type: string
                  content:
                    application/yaml:
                      schema:
                        type: string
                '304':
                  description: The document has not changed since the ETag sent in `If-None-Match`.
                  headers:
                    ETag:
                      $ref: '#/components/headers/ETag'

          /v1/apple/notifications:
            post:
              tags: [notifications]
              operationId: receiveNotification
              summary: Receive an App Store Server Notification V2
              description: Apple sends no key; the signed payload is its own proof. A notification is recorded once
                by its `notificationUUID` and applied to the ledger and subscription states in the same transaction.
              security: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/NotificationDelivery'
              responses:
                '200':
                  description: Recorded (`applied`, `ignored`) or recorded before (`duplicate`).
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/NotificationResult'
                '400':
                  description: '`invalidBody`, `missingSignedPayload` (not `{"signedPayload":"…"}`), or
                    `malformedNotification` (a verified payload without UUID, type, bundle id or environment).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  description: '`invalidSignature`: the envelope, `signedTransactionInfo` or `signedRenewalInfo` does
                    not verify, or the signed data inside belongs to another app, environment or subscription. Nothing
                    is recorded.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '404':
                  description: '`appNotFound`: a genuine notification for a bundle id (or app Apple ID) the server
                    does not know. Not recorded, so Apple retries.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'

          /v1/products:
            get:
              tags: [app]
              operationId: masterList
              summary: The master list of products
              description: What to ask StoreKit for and what each product gives. Send the ETag back in `If-None-Match`;
                an unchanged list answers 304.
              security:
                - appKey: []
              parameters:
                - name: If-None-Match
                  in: header
                  description: The ETag of the list the app has (compared as a whole, exactly).
                  schema:
                    type: string
              responses:
                '200':
                  description: The list.
                  headers:
                    ETag:
                      $ref: '#/components/headers/ETag'
                    Cache-Control:
                      description: '`no-cache`'
                      schema:
                        type: string
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/MasterList'
                '304':
                  description: The list has not changed.
                  headers:
                    ETag:
                      $ref: '#/components/headers/ETag'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/keys:
            get:
              tags: [app]
              operationId: snapshotKeys
              summary: The keys entitlement snapshots are signed with
              description: A JSON Web Key Set (RFC 7517) of the deployment's ES256 keys, the current one first. Every
                process of a deployment signs with the same key (kept in the database unless `snapshot.private-key-file`
                is set), so one set checks every snapshot. During a rotation the set also lists the next or the
                previous key (`snapshot.published-key-files`). An app may also ship the key inside itself.
              security:
                - appKey: []
              responses:
                '200':
                  description: The key set.
                  headers:
                    Cache-Control:
                      description: '`public, max-age=3600`'
                      schema:
                        type: string
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SnapshotKeySet'
                '401':
                  $ref: '#/components/responses/Unauthorized'
          /v1/receipts:
            post:
              tags: [app]
              operationId: submit
              summary: Submit a purchase
              description: Verified locally first (a forgery gets 422 and nothing is recorded), then recorded, granted
                provisionally and queued for confirmation with Apple.
              security:
                - appKey: []
              parameters:
                - name: wait
                  in: query
                  description: Seconds to wait for Apple's answer (at most 60 are waited). Ignored unless a positive
                    number.
                  schema:
                    type: number
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/SubmissionRequest'
              responses:
                '200':
                  description: The submission is settled (confirmed, rejected or dead-lettered).
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SubmissionResult'
                '202':
                  description: Accepted; the confirmation with Apple is pending or retrying.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SubmissionResult'
                '400':
                  $ref: '#/components/responses/InvalidSubmission'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '409':
                  $ref: '#/components/responses/SubmissionConflict'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '422':
                  $ref: '#/components/responses/VerificationFailed'
                '500':
                  $ref: '#/components/responses/SubmissionFailed'
          /v1/submissions/{id}:
            get:
              tags: [app]
              operationId: submission
              summary: A submission's state
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/SubmissionId'
              responses:
                '200':
                  description: The submission.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Submission'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  description: '`submissionNotFound` (also for another app''s submission).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/customers/{customer}:
            get:
              tags: [app]
              operationId: customer
              summary: A customer's entitlements, balances, purchases and subscriptions
              description: An unknown customer is answered as one with nothing (no 404). Aliases are resolved.
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
              responses:
                '200':
                  description: The customer now.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Customer'
                '400':
                  $ref: '#/components/responses/InvalidCustomerId'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/customers/{customer}/snapshot:
            get:
              tags: [app]
              operationId: snapshot
              summary: A customer's entitlements, balances and purchases, signed by the server
              description: What the server vouches the customer has now, as a compact JWS (ES256, `typ` `till-snapshot`,
                `kid` one of `GET /v1/keys`) an app can keep on disk and check offline; any edit breaks the signature. An
                unknown customer gets a snapshot with nothing (no 404). Aliases are resolved (`owner`).
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
              responses:
                '200':
                  description: The signed snapshot, and its payload in plain JSON.
                  headers:
                    Cache-Control:
                      description: '`no-store`'
                      schema:
                        type: string
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SignedSnapshot'
                '400':
                  $ref: '#/components/responses/InvalidCustomerId'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/customers/{customer}/restore:
            post:
              tags: [app]
              operationId: restore
              summary: Restore purchases
              description: A submission for the customer in the path, through the same pipeline (idempotently),
                answering with everything the customer can have back (never consumables). Always 200, even while the
                confirmation is pending; the submission in the answer tells its state.
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
                - name: wait
                  in: query
                  description: Seconds to wait for Apple's answer (at most 60 are waited) before answering with what
                    is restored then; a receipt Apple refuses restores nothing. Ignored unless a positive number.
                  schema:
                    type: number
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/RestoreRequest'
              responses:
                '200':
                  description: The submission and what is restored.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RestoreResult'
                '400':
                  $ref: '#/components/responses/InvalidSubmission'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '409':
                  $ref: '#/components/responses/SubmissionConflict'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '422':
                  $ref: '#/components/responses/VerificationFailed'
                '500':
                  $ref: '#/components/responses/SubmissionFailed'
          /v1/customers/{customer}/debits:
            post:
              tags: [app]
              operationId: debit
              summary: Spend credits
              description: A balance never goes below zero, and a `requestId` is spent once per customer id (a resend
                answers the same balances without spending twice; the same request id with another credit or amount is
                refused with `requestIdReused`).
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/DebitRequest'
              responses:
                '200':
                  description: The customer's balances after the debit.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Balances'
                '400':
                  description: '`invalidBody`, `invalidCustomerId` (the path''s), `invalidAmount` (not positive),
                    `invalidRequestId`, `invalidCredit` (not 1–200 characters).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '409':
                  description: '`insufficientBalance`, `requestIdReused` (this customer spent the request id on another
                    credit or amount).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/customers/{customer}/aliases:
            post:
              tags: [app]
              operationId: link
              summary: Link a guest id to this customer
              description: The guest's purchases and balances move to the customer in the path once; later submissions
                under the guest id land on the customer. A guest id belongs to one account, and accounts are never
                merged.
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/AliasRequest'
              responses:
                '200':
                  description: The customer after the link.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Customer'
                '400':
                  description: '`invalidBody`, `invalidCustomerId` (the path''s or the guest id: empty or over 200
                    characters once trimmed), `invalidAlias` (the guest id is the customer''s own).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '409':
                  description: '`guestLinkedElsewhere` (the guest id is linked to another account), `guestIsAnAccount`
                    (guests are linked to it), `accountIsAGuest` (the path names a linked guest).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/customers/{customer}/downloads:
            post:
              tags: [app, content]
              operationId: downloads
              summary: Signed download URLs for a product's files
              description: One URL per file of the product (or the one file named), if the customer may have them now.
              security:
                - appKey: []
              parameters:
                - $ref: '#/components/parameters/Customer'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/DownloadsRequest'
              responses:
                '200':
                  description: The URLs.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Downloads'
                '400':
                  description: '`invalidBody`, `invalidCustomerId` (the path''s).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  description: '`notEntitled`: the customer may not have the product''s content now.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '404':
                  description: '`productNotFound`, `contentNotFound` (no file of that name).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /v1/content/{bundle}/{sha256}:
            parameters:
              - name: bundle
                in: path
                required: true
                description: The app's bundle id (percent-decoded).
                schema:
                  type: string
              - name: sha256
                in: path
                required: true
                description: The file's SHA-256, 64 lowercase hex digits.
                schema:
                  type: string
              - name: name
                in: query
                required: true
                description: The file's name on the product.
                schema:
                  type: string
              - name: customer
                in: query
                required: true
                description: The customer the URL was made for.
                schema:
                  type: string
              - name: expires
                in: query
                required: true
                description: UNIX seconds; the URL stops working after this second.
                schema:
                  type: string
              - name: signature
                in: query
                required: true
                description: HMAC-SHA256 of the URL's fields under the server secret, 64 hex digits.
                schema:
                  type: string
              - name: Range
                in: header
                description: One range, `bytes=a-b`, `bytes=a-` or `bytes=-n`. A range the server cannot parse, or
                  several, is answered with the whole file.
                schema:
                  type: string
              - name: If-Range
                in: header
                description: The range applies only if this equals the ETag; otherwise the whole (current) file is sent.
                schema:
                  type: string
              - name: If-None-Match
                in: header
                description: 304 when it matches the ETag (checked after the signature and the entitlement).
                schema:
                  type: string
            get:
              tags: [content]
              operationId: download
              summary: Download a file with a signed URL
              description: No key; the signature is the authority, and the customer's entitlement is checked again.
              security: []
              responses:
                '200':
                  $ref: '#/components/responses/File'
                '206':
                  $ref: '#/components/responses/FileRange'
                '304':
                  $ref: '#/components/responses/FileNotModified'
                '403':
                  $ref: '#/components/responses/DownloadRefused'
                '404':
                  $ref: '#/components/responses/DownloadGone'
                '416':
                  $ref: '#/components/responses/RangeNotSatisfiable'
                '500':
                  $ref: '#/components/responses/ContentMissing'
            head:
              tags: [content]
              operationId: downloadHead
              summary: The headers of a download, without the body
              security: []
              responses:
                '200':
                  $ref: '#/components/responses/File'
                '206':
                  $ref: '#/components/responses/FileRange'
                '304':
                  $ref: '#/components/responses/FileNotModified'
                '403':
                  $ref: '#/components/responses/DownloadRefused'
                '404':
                  $ref: '#/components/responses/DownloadGone'
                '416':
                  $ref: '#/components/responses/RangeNotSatisfiable'
                '500':
                  $ref: '#/components/responses/ContentMissing'

          /admin/v1/apps:
            get:
              tags: [admin]
              operationId: apps
              summary: Every app, a page at a time
              description: Oldest first. Pages with `limit` and `cursor` like every admin list.
              security:
                - operatorToken: []
              parameters:
                - $ref: '#/components/parameters/Limit'
                - $ref: '#/components/parameters/Cursor'
              responses:
                '200':
                  description: A page of apps.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/AppPage'
                '400':
                  $ref: '#/components/responses/InvalidPage'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'
            post:
              tags: [admin]
              operationId: createApp
              summary: Register an app
              description: The answer carries the app's new key.
              security:
                - operatorToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      allOf:
                        - $ref: '#/components/schemas/AppInput'
                      required: [bundleId]
              responses:
                '201':
                  description: The app.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/App'
                '400':
                  description: '`invalidBody`, `invalidBundleId`, `invalidAPIKey` (a private key without `apiKeyId` and
                    `apiIssuerId`, or not a P-256 PEM key).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '409':
                  description: '`appExists`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/apps/{bundle}:
            parameters:
              - $ref: '#/components/parameters/Bundle'
            get:
              tags: [admin]
              operationId: app
              summary: An app
              security:
                - operatorToken: []
              responses:
                '200':
                  description: The app.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/App'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/AppNotFound'
                '500':
                  $ref: '#/components/responses/InternalError'
            patch:
              tags: [admin]
              operationId: updateApp
              summary: Change an app
              description: Only the fields sent change. The bundle id cannot change; `bundleId` in the body may only
                repeat it.
              security:
                - operatorToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/AppInput'
              responses:
                '200':
                  description: The app.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/App'
                '400':
                  description: '`invalidBody`, `invalidAPIKey`, `bundleIdImmutable` (another `bundleId` in the
                    body).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/AppNotFound'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/apps/{bundle}/products:
            get:
              tags: [admin]
              operationId: products
              summary: An app's catalogue, a page at a time
              security:
                - operatorToken: []
              parameters:
                - $ref: '#/components/parameters/Bundle'
                - $ref: '#/components/parameters/Limit'
                - $ref: '#/components/parameters/Cursor'
              responses:
                '200':
                  description: A page of products, in master-list order (`position`, then product id).
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/ProductPage'
                '400':
                  $ref: '#/components/responses/InvalidPage'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/AppNotFound'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/apps/{bundle}/products/{product}:
            put:
              tags: [admin]
              operationId: putProduct
              summary: Create or replace a product
              description: The product's content files are kept. Answers 201 when it was created, 200 when it was
                replaced.
              security:
                - operatorToken: []
              parameters:
                - $ref: '#/components/parameters/Bundle'
                - $ref: '#/components/parameters/Product'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/ProductInput'
              responses:
                '200':
                  description: The product, replaced.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Product'
                '201':
                  description: The product, created.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Product'
                '400':
                  description: '`invalidBody`, `invalidProductId` (not 1–100 characters), `invalidProductType` (no
                    `type`), `consumableEntitlements`, `durationRequired` (a non-renewing subscription granting
                    entitlements without `durationSeconds`), `invalidCredits` (not positive).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/AppNotFound'
                '413':
                  $ref: '#/components/responses/BodyTooLarge'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/apps/{bundle}/products/{product}/content:
            get:
              tags: [admin, content]
              operationId: content
              summary: A product's files, a page at a time
              security:
                - operatorToken: []
              parameters:
                - $ref: '#/components/parameters/Bundle'
                - $ref: '#/components/parameters/Product'
                - $ref: '#/components/parameters/Limit'
                - $ref: '#/components/parameters/Cursor'
              responses:
                '200':
                  description: A page of files, by name.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/ContentFilePage'
                '400':
                  $ref: '#/components/responses/InvalidPage'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/ProductNotFound'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/apps/{bundle}/products/{product}/content/{name}:
            parameters:
              - $ref: '#/components/parameters/Bundle'
              - $ref: '#/components/parameters/Product'
              - name: name
                in: path
                required: true
                description: The file's name, percent-encoded (`My%20Book.pdf`); what the device saves it as.
                schema:
                  type: string
            put:
              tags: [admin, content]
              operationId: uploadContent
              summary: Upload a file to a product
              description: The raw bytes are streamed to disk, stored once by SHA-256. A file of the same name is
                replaced. The master list's ETag changes.
              security:
                - operatorToken: []
              parameters:
                - name: Content-Length
                  in: header
                  description: When it declares more than `content.max-upload-bytes`, the upload is refused at once.
                  schema:
                    type: integer
              requestBody:
                required: true
                description: The file. Its Content-Type is what downloads are served with (`application/octet-stream`
                  when none is sent).
                content:
                  '*/*': {}
              responses:
                '200':
                  description: The file replaced one of the same name.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/ContentFile'
                '201':
                  description: The name is new to the product.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/ContentFile'
                '400':
                  description: '`invalidName` (not 1–200 printable characters, or with `/`, `\`, `"` or `..`),
                    `invalidContentType`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  $ref: '#/components/responses/ProductNotFound'
                '409':
                  description: '`consumableContent`: consumables deliver no content.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  description: '`bodyTooLarge`: over `content.max-upload-bytes` (512 MiB by default).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '500':
                  $ref: '#/components/responses/InternalError'
            delete:
              tags: [admin, content]
              operationId: deleteContent
              summary: Take a file off a product
              description: Its bytes are deleted once no product of any app lists them.
              security:
                - operatorToken: []
              responses:
                '204':
                  description: Taken off.
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  description: '`productNotFound`, `contentNotFound`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/submissions:
            get:
              tags: [admin]
              operationId: submissions
              summary: Submissions in a state, a page at a time
              description: Oldest change first; `total` counts every submission in the state.
              security:
                - operatorToken: []
              parameters:
                - name: state
                  in: query
                  schema:
                    $ref: '#/components/schemas/SubmissionState'
                    default: deadLettered
                - $ref: '#/components/parameters/Limit'
                - $ref: '#/components/parameters/Cursor'
              responses:
                '200':
                  description: A page of submissions.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SubmissionPage'
                '400':
                  description: '`invalidState`, `invalidLimit`, `invalidCursor`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/submissions/{id}/retry:
            post:
              tags: [admin]
              operationId: retrySubmission
              summary: Put a dead-lettered submission back in the queue
              description: Its attempts count from zero again. No body.
              security:
                - operatorToken: []
              parameters:
                - $ref: '#/components/parameters/SubmissionId'
              responses:
                '200':
                  description: The submission, pending again.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Submission'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '404':
                  description: '`submissionNotFound`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '409':
                  description: '`notDeadLettered`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '500':
                  $ref: '#/components/responses/InternalError'
          /admin/v1/reports/revenue:
            get:
              tags: [admin]
              operationId: revenue
              summary: Revenue per day, product or currency
              description: Production purchases only; refunds and revocations count negative.
              security:
                - operatorToken: []
              parameters:
                - name: from
                  in: query
                  required: true
                  description: A date (`2026-11-01`, UTC midnight) or UNIX milliseconds; included.
                  schema:
                    type: string
                - name: to
                  in: query
                  required: true
                  description: A date or UNIX milliseconds, after `from`; excluded.
                  schema:
                    type: string
                - name: groupBy
                  in: query
                  schema:
                    type: string
                    enum: [day, product, currency]
                    default: day
                - name: bundleId
                  in: query
                  description: One app only.
                  schema:
                    type: string
              responses:
                '200':
                  description: The report.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RevenueReport'
                '400':
                  description: '`invalidRange`, `invalidGroupBy`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '500':
                  $ref: '#/components/responses/InternalError'

        components:
          securitySchemes:
            appKey:
              type: http
              scheme: bearer
              bearerFormat: tk_ followed by 48 hex digits
              description: 'The app''s key (from `POST /admin/v1/apps`): `Authorization: Bearer tk_…`. It identifies
                the app and grants nothing by itself.'
            operatorToken:
              type: http
              scheme: bearer
              description: 'The operator token (`operator.token`): `Authorization: Bearer <operator token>`, compared in
                constant time.'

          parameters:
            Bundle:
              name: bundle
              in: path
              required: true
              description: The app's bundle id.
              schema:
                type: string
            Product:
              name: product
              in: path
              required: true
              description: The product id.
              schema:
                type: string
            Limit:
              name: limit
              in: query
              description: How many items a page holds at most.
              schema:
                type: integer
                minimum: 1
                maximum: 1000
                default: 100
            Cursor:
              name: cursor
              in: query
              description: 'The `nextCursor` of the previous page; without it, the first page. Pages stay consistent
                while items come and go: each starts after the previous page''s last item.'
              schema:
                type: string
            Customer:
              name: customer
              in: path
              required: true
              description: The app's account id for the customer, or a guest id; aliases are resolved. Spaces
                around it are trimmed; what is left has 1–200 characters (otherwise 400 `invalidCustomerId`).
              schema:
                $ref: '#/components/schemas/CustomerId'
            SubmissionId:
              name: id
              in: path
              required: true
              description: The submission's id.
              schema:
                type: string
            IfNoneMatch:
              name: If-None-Match
              in: header
              description: The ETag of the copy the client has.
              schema:
                type: string

          headers:
            ETag:
              description: A strong entity tag, quoted.
              schema:
                type: string

          responses:
            Unauthorized:
              description: '`unauthorized`: no key or token, or a wrong one.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            InvalidBody:
              description: '`invalidBody`: the body is not the JSON expected.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            InvalidPage:
              description: '`invalidLimit` (not 1–1000) or `invalidCursor` (not a `nextCursor` of this list).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            InvalidCustomerId:
              description: '`invalidCustomerId`: the customer in the path is empty or over 200 characters.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            BodyTooLarge:
              description: '`bodyTooLarge`: a JSON body over 2 MiB.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            InternalError:
              description: '`internalError`: a fault of the server, logged with the request id.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            SubmissionFailed:
              description: '`internalError`, `submissionLost` (a concurrent resend with the same idempotency key won
                the race, yet its submission cannot be read).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            AppNotFound:
              description: '`appNotFound`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            ProductNotFound:
              description: '`productNotFound` (also for an unknown app).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            InvalidSubmission:
              description: '`invalidBody`, `invalidCustomerId` (not 1–200 characters), `oneFormatExpected` (not
                exactly one of `receipt`, `transactionReceipt`, `signedTransaction`), `invalidIdempotencyKey` (not
                1–200 characters).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            SubmissionConflict:
              description: '`ownedByAnotherCustomer` (every transaction belongs to another customer: a replay),
                `idempotencyKeyReused` (the key came with another payload).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            VerificationFailed:
              description: 'The purchase fails local verification and nothing is recorded: `invalidFormat`,
                `tooLarge`, `unsupportedAlgorithm`, `invalidCertificate`, `invalidChainLength`, `invalidChain` (not
                signed by Apple), `verificationFailure` (a forged signature), `malformedPayload`,
                `invalidAppIdentifier` (another app''s), `invalidEnvironment`, `sandboxNotAccepted`,
                `untrustedForProduction` (production data under a sandbox-only root).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            File:
              description: The whole file (no body for HEAD).
              headers:
                ETag:
                  description: The file's SHA-256 in quotes.
                  schema:
                    type: string
                Accept-Ranges:
                  schema:
                    type: string
                    const: bytes
                Cache-Control:
                  schema:
                    type: string
                    const: private
                Content-Disposition:
                  description: '`attachment; filename="…"`, plus `filename*` for names beyond ASCII.'
                  schema:
                    type: string
                Content-Length:
                  schema:
                    type: integer
              content:
                '*/*':
                  schema:
                    description: The file's bytes, with the Content-Type it was uploaded with.
            FileRange:
              description: One range of the file (no body for HEAD).
              headers:
                ETag:
                  description: The file's SHA-256 in quotes.
                  schema:
                    type: string
                Content-Range:
                  description: '`bytes a-b/size`'
                  schema:
                    type: string
                Accept-Ranges:
                  schema:
                    type: string
                    const: bytes
                Cache-Control:
                  schema:
                    type: string
                    const: private
                Content-Disposition:
                  schema:
                    type: string
                Content-Length:
                  schema:
                    type: integer
              content:
                '*/*':
                  schema:
                    description: The bytes of the range.
            FileNotModified:
              description: '`If-None-Match` matched the ETag.'
              headers:
                ETag:
                  description: The file's SHA-256 in quotes.
                  schema:
                    type: string
                Accept-Ranges:
                  schema:
                    type: string
                    const: bytes
                Cache-Control:
                  schema:
                    type: string
                    const: private
            DownloadRefused:
              description: '`invalidSignature` (a parameter is missing or was changed, or another server signed it),
                `urlExpired` (ask for a new URL), `notEntitled` (refunded, revoked or lapsed since).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            DownloadGone:
              description: '`contentNotFound`: the file was taken off the product since the URL was made.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            RangeNotSatisfiable:
              description: '`rangeNotSatisfiable`: the range starts at or beyond the end of the file.'
              headers:
                Content-Range:
                  description: '`bytes */size`'
                  schema:
                    type: string
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            ContentMissing:
              description: '`contentMissing` (the file is missing or truncated on disk), `internalError`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'

          schemas:
            Error:
              type: object
              required: [error]
              properties:
                error:
                  type: object
                  required: [code, message]
                  properties:
                    code:
                      type: string
                      description: Stable and machine-readable (lowerCamel).
                      examples: [invalidBody]
                    message:
                      type: string
                      description: For people; may change.

            ProductType:
              type: string
              enum: [consumable, nonConsumable, autoRenewable, nonRenewing, freeSubscription]
            RestorePolicy:
              type: string
              enum: [keepWithFirstOwner, transferToLatest]
              description: '`keepWithFirstOwner`: a transaction owned by one customer is refused for another.
                `transferToLatest`: it moves to whoever submitted it last.'
            SubmissionState:
              type: string
              enum: [pending, confirmed, retrying, rejected, deadLettered]
            Credits:
              type: object
              description: 'Credit name to amount (`{"gems": 100}`).'
              additionalProperties:
                type: integer
                format: int64

            ContentFile:
              type: object
              required: [name, sha256, size, contentType]
              properties:
                name:
                  type: string
                sha256:
                  type: string
                  description: 64 lowercase hex digits.
                size:
                  type: integer
                  format: int64
                contentType:
                  type: string

            MasterList:
              type: object
              required: [products, etag]
              properties:
                products:
                  type: array
                  items:
                    $ref: '#/components/schemas/MasterListProduct'
                etag:
                  type: string
                  description: The same as the ETag header.
            MasterListProduct:
              type: object
              required: [productId, type, title, entitlements, credits, content]
              properties:
                productId:
                  type: string
                type:
                  $ref: '#/components/schemas/ProductType'
                title:
                  type: string
                entitlements:
                  type: array
                  items:
                    type: string
                credits:
                  $ref: '#/components/schemas/Credits'
                content:
                  type: array
                  items:
                    $ref: '#/components/schemas/ContentFile'
                subscriptionGroup:
                  type: string

            SubmissionRequest:
              type: object
              description: The customer and exactly one of `receipt`, `transactionReceipt`, `signedTransaction`.
              required: [customerId]
              oneOf:
                - required: [receipt]
                - required: [transactionReceipt]
                - required: [signedTransaction]
              properties:
                customerId:
                  $ref: '#/components/schemas/CustomerId'
                receipt:
                  $ref: '#/components/schemas/Base64Receipt'
                transactionReceipt:
                  $ref: '#/components/schemas/Base64Receipt'
                signedTransaction:
                  $ref: '#/components/schemas/CompactJWS'
                idempotencyKey:
                  $ref: '#/components/schemas/IdempotencyKey'
            RestoreRequest:
              type: object
              description: A submission without `customerId` (it is in the path), with exactly one of `receipt`,
                `transactionReceipt`, `signedTransaction`.
              oneOf:
                - required: [receipt]
                - required: [transactionReceipt]
                - required: [signedTransaction]
              properties:
                receipt:
                  $ref: '#/components/schemas/Base64Receipt'
                transactionReceipt:
                  $ref: '#/components/schemas/Base64Receipt'
                signedTransaction:
                  $ref: '#/components/schemas/CompactJWS'
                idempotencyKey:
                  $ref: '#/components/schemas/IdempotencyKey'
            AppPage:
              type: object
              description: A page of a list; follow `nextCursor` until it is null.
              required: [items, total]
              properties:
                items:
                  type: array
                  items:
                    $ref: '#/components/schemas/App'
                nextCursor:
                  type: [string, 'null']
                  description: Pass as `cursor` for the next page; null on the last page.
                total:
                  type: integer
                  description: How many items the whole list has.
            ProductPage:
              type: object
              description: A page of a list; follow `nextCursor` until it is null.
              required: [items, total]
              properties:
                items:
                  type: array
                  items:
                    $ref: '#/components/schemas/Product'
                nextCursor:
                  type: [string, 'null']
                  description: Pass as `cursor` for the next page; null on the last page.
                total:
                  type: integer
                  description: How many items the whole list has.
            ContentFilePage:
              type: object
              description: A page of a list; follow `nextCursor` until it is null.
              required: [items, total]
              properties:
                items:
                  type: array
                  items:
                    $ref: '#/components/schemas/ContentFile'
                nextCursor:
                  type: [string, 'null']
                  description: Pass as `cursor` for the next page; null on the last page.
                total:
                  type: integer
                  description: How many items the whole list has.
            SubmissionPage:
              type: object
              description: A page of a list; follow `nextCursor` until it is null.
              required: [items, total]
              properties:
                items:
                  type: array
                  items:
                    $ref: '#/components/schemas/Submission'
                nextCursor:
                  type: [string, 'null']
                  description: Pass as `cursor` for the next page; null on the last page.
                total:
                  type: integer
                  description: How many items the whole list has.
            CustomerId:
              type: string
              description: The app's account id, or an anonymous device id for a guest (1–200 characters once the
                spaces around it are trimmed).
              minLength: 1
              maxLength: 200
              pattern: '\S'
            IdempotencyKey:
              type: string
              description: A resend with the same key answers the first submission (1–200 characters).
              minLength: 1
              maxLength: 200
            Base64Receipt:
              type: string
              description: An app receipt or an iOS 6-style transaction receipt, base64 (line breaks allowed).
              minLength: 1
              pattern: '^[A-Za-z0-9+/=\r\n]+$'
            CompactJWS:
              type: string
              description: A StoreKit 2 signed transaction, a compact JWS (three base64url segments).
              pattern: '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$'
            Submission:
              type: object
              required: [id, state, kind, environment, customerId, transactionIds, attempts, createdAt]
              properties:
                id:
                  type: string
                state:
                  $ref: '#/components/schemas/SubmissionState'
                kind:
                  type: string
                  enum: [appReceipt, transactionReceipt, signedTransaction]
                environment:
                  type: string
                  examples: [Production, Sandbox]
                customerId:
                  type: string
                  description: The owner, after aliases.
                transactionIds:
                  type: array
                  items:
                    type: string
                attempts:
                  type: integer
                nextAttemptAt:
                  type: integer
                  format: int64
                  description: When the next attempt is due (only while retrying).
                lastStatus:
                  type: string
                  description: Apple's last answer (`HTTP 200`, `status 21005`, `timeout`, …).
                lastError:
                  type: string
                retryCause:
                  type: string
                  enum: [appleUnavailable, configuration, other]
                  description: While retrying, why the last attempt failed. `appleUnavailable` is tried again as soon
                    as Apple answers; `configuration` (Apple refused this server's shared secret or API key) as soon as
                    the app's credentials change; `other` after its back-off.
                reason:
                  type: string
                  description: Why Apple refused it (rejected), or why retries stopped (dead-lettered).
                createdAt:
                  type: integer
                  format: int64
                confirmedAt:
                  type: integer
                  format: int64
            RefusedTransaction:
              type: object
              required: [transactionId, reason]
              properties:
                transactionId:
                  type: string
                reason:
                  type: string
                  examples: [ownedByAnotherCustomer]
            SubmissionResult:
              type: object
              required: [submission, customer, refused]
              properties:
                submission:
                  $ref: '#/components/schemas/Submission'
                customer:
                  $ref: '#/components/schemas/Customer'
                refused:
                  type: array
                  items:
                    $ref: '#/components/schemas/RefusedTransaction'
                signedSnapshot:
                  type: string
                  description: The signed entitlement snapshot of the customer who submitted, as it is when the answer
                    leaves (see `GET /v1/customers/{customer}/snapshot`).
            RestoreResult:
              type: object
              required: [submission, restored, customer]
              properties:
                submission:
                  $ref: '#/components/schemas/Submission'
                restored:
                  type: array
                  description: The customer's purchases that are not revoked and not consumables.
                  items:
                    $ref: '#/components/schemas/Purchase'
                customer:
                  $ref: '#/components/schemas/Customer'
                signedSnapshot:
                  type: string
                  description: The signed entitlement snapshot of the customer in the path, as it is when the answer
                    leaves (see `GET /v1/customers/{customer}/snapshot`).

            Customer:
              type: object
              required: [customerId, entitlements, balances, purchases, subscriptions]
              properties:
                customerId:
                  type: string
                  description: The customer, after aliases.
                entitlements:
                  type: array
                  items:
                    $ref: '#/components/schemas/Entitlement'
                balances:
                  $ref: '#/components/schemas/Credits'
                purchases:
                  type: array
                  items:
                    $ref: '#/components/schemas/Purchase'
                subscriptions:
                  type: array
                  items:
                    $ref: '#/components/schemas/SubscriptionState'
            Entitlement:
              type: object
              required: [id, productId, transactionId, environment, provisional]
              properties:
                id:
                  type: string
                productId:
                  type: string
                transactionId:
                  type: string
                environment:
                  type: string
                expiresDate:
                  type: integer
                  format: int64
                  description: Absent for entitlements that do not expire.
                provisional:
                  type: boolean
                  description: True until Apple has confirmed the purchase that grants it.
            Purchase:
              type: object
              required:
                [transactionId, originalTransactionId, productId, environment, quantity, purchaseDate, confirmed]
              properties:
                transactionId:
                  type: string
                originalTransactionId:
                  type: string
                productId:
                  type: string
                productType:
                  $ref: '#/components/schemas/ProductType'
                environment:
                  type: string
                quantity:
                  type: integer
                purchaseDate:
                  type: integer
                  format: int64
                expiresDate:
                  type: integer
                  format: int64
                revocationDate:
                  type: integer
                  format: int64
                revocationReason:
                  type: string
                  examples: [refund, upgraded, familyRevoked]
                confirmed:
                  type: boolean
            SubscriptionState:
              type: object
              description: The renewal state of an auto-renewable subscription, from the newest signed renewal info.
              required: [originalTransactionId, environment, isInBillingRetryPeriod, updatedAt]
              properties:
                originalTransactionId:
                  type: string
                environment:
                  type: string
                productId:
                  type: string
                autoRenewProductId:
                  type: string
                autoRenewStatus:
                  type: boolean
                status:
                  type: string
                  description: '`active`, `expired`, `billingRetry`, `gracePeriod`, `revoked` (`unknown(N)` for a status
                    Apple adds later).'
                expiresDate:
                  type: integer
                  format: int64
                  description: The end of the latest period in the ledger.
                isInBillingRetryPeriod:
                  type: boolean
                gracePeriodExpiresDate:
                  type: integer
                  format: int64
                expirationIntent:
                  type: integer
                  description: 1 cancelled, 2 billing error, 3 price increase refused, 4 product unavailable.
                renewalDate:
                  type: integer
                  format: int64
                priceIncreaseStatus:
                  type: integer
                lastNotificationType:
                  type: string
                updatedAt:
                  type: integer
                  format: int64

            SnapshotKeySet:
              type: object
              description: A JSON Web Key Set (RFC 7517).
              required: [keys]
              properties:
                keys:
                  type: array
                  description: The current key first; older ones stay while snapshots they signed may be on devices.
                  items:
                    $ref: '#/components/schemas/SnapshotPublicKey'
            SnapshotPublicKey:
              type: object
              description: A P-256 public key as a JSON Web Key (RFC 7517, RFC 7518 §6.2).
              required: [kty, crv, alg, use, kid, x, y]
              properties:
                kty:
                  type: string
                  const: EC
                crv:
                  type: string
                  const: P-256
                alg:
                  type: string
                  const: ES256
                use:
                  type: string
                  const: sig
                kid:
                  type: string
                  description: The first 16 hex digits of the SHA-256 of the key's X9.63 form; a snapshot's JWS header names
                    it.
                  examples: [3f1c0a9b7d2e4c81]
                x:
                  type: string
                  description: The curve point's x coordinate, 32 bytes, base64url without padding.
                y:
                  type: string
                  description: Its y coordinate, likewise.
            SignedSnapshot:
              type: object
              required: [signedSnapshot, snapshot]
              properties:
                signedSnapshot:
                  type: string
                  description: 'A compact JWS: header `{"alg":"ES256","kid":…,"typ":"till-snapshot"}`, payload an
                    `EntitlementSnapshot`. Only this form is evidence; keep it and check it with the keys of `GET /v1/keys`.'
                snapshot:
                  $ref: '#/components/schemas/EntitlementSnapshot'
            EntitlementSnapshot:
              type: object
              description: What the server vouches a customer has at `issuedAt`.
              required: [bundleId, customerId, owner, issuedAt, entitlements, balances, purchases]
              properties:
                bundleId:
                  type: string
                  description: The app the snapshot is for.
                customerId:
                  type: string
                  description: The customer id the app asked about.
                owner:
                  type: string
                  description: Who owns the purchases after aliases.
                issuedAt:
                  type: integer
                  format: int64
                  description: When the server signed it.
                entitlements:
                  type: array
                  items:
                    $ref: '#/components/schemas/SnapshotGrant'
                balances:
                  $ref: '#/components/schemas/Credits'
                purchases:
                  type: array
                  items:
                    $ref: '#/components/schemas/SnapshotPurchase'
            SnapshotGrant:
              type: object
              required: [id, productId, provisional]
              properties:
                id:
                  type: string
                productId:
                  type: string
                expiresDate:
                  type: integer
                  format: int64
                  description: Absent for entitlements that do not expire.
                provisional:
                  type: boolean
                  description: True until Apple has confirmed the purchase that grants it.
            SnapshotPurchase:
              type: object
              required:
                [transactionId, originalTransactionId, productId, quantity, purchaseDate, revoked, confirmed]
              properties:
                transactionId:
                  type: string
                originalTransactionId:
                  type: string
                productId:
                  type: string
                productType:
                  $ref: '#/components/schemas/ProductType'
                quantity:
                  type: integer
                purchaseDate:
                  type: integer
                  format: int64
                expiresDate:
                  type: integer
                  format: int64
                revoked:
                  type: boolean
                  description: Refunded or revoked (the purchase's `revocationDate` is set).
                confirmed:
                  type: boolean

            DebitRequest:
              type: object
              required: [credit, amount, requestId]
              properties:
                credit:
                  type: string
                amount:
                  type: integer
                  format: int64
                  minimum: 1
                  description: Positive.
                requestId:
                  type: string
                  description: Spent once (1–200 characters).
                  minLength: 1
                  maxLength: 200
            Balances:
              type: object
              required: [balances]
              properties:
                balances:
                  $ref: '#/components/schemas/Credits'
            AliasRequest:
              type: object
              required: [customerId]
              properties:
                customerId:
                  $ref: '#/components/schemas/CustomerId'

            DownloadsRequest:
              type: object
              required: [productId]
              properties:
                productId:
                  type: string
                name:
                  type: string
                  description: One file only.
            Downloads:
              type: object
              required: [downloads]
              properties:
                downloads:
                  type: array
                  items:
                    $ref: '#/components/schemas/ContentDownload'
            ContentDownload:
              type: object
              required: [name, sha256, size, contentType, url, expiresAt]
              properties:
                name:
                  type: string
                sha256:
                  type: string
                size:
                  type: integer
                  format: int64
                contentType:
                  type: string
                url:
                  type: string
                  description: Relative to the server's base URL; works without the app key, for this customer, until
                    `expiresAt`.
                expiresAt:
                  type: integer
                  format: int64

            NotificationDelivery:
              type: object
              required: [signedPayload]
              properties:
                signedPayload:
                  type: string
                  description: A JWS signed by Apple whose payload is the notification.
                  minLength: 1
            NotificationResult:
              type: object
              required: [status, notificationUUID, outcome]
              properties:
                status:
                  type: string
                  enum: [applied, duplicate, ignored]
                notificationUUID:
                  type: string
                outcome:
                  type: string
                  enum: [applied, recorded, unmatched, sandboxNotAccepted, unsupportedEnvironment]
                  description: What the first delivery did.

            App:
              type: object
              description: An app; its App Store Server API private key is never returned.
              required: [bundleId, name, appKey, sharedSecrets, hasAPIKey, acceptSandbox, restorePolicy, createdAt]
              properties:
                bundleId:
                  type: string
                appAppleId:
                  type: integer
                  format: int64
                name:
                  type: string
                appKey:
                  type: string
                sharedSecrets:
                  type: array
                  items:
                    type: string
                apiKeyId:
                  type: string
                apiIssuerId:
                  type: string
                hasAPIKey:
                  type: boolean
                acceptSandbox:
                  type: boolean
                restorePolicy:
                  $ref: '#/components/schemas/RestorePolicy'
                createdAt:
                  type: integer
                  format: int64
            AppInput:
              type: object
              properties:
                bundleId:
                  type: string
                  description: Reverse-DNS, at most 155 characters, no spaces.
                appAppleId:
                  type: integer
                  format: int64
                name:
                  type: string
                  description: The bundle id when not given.
                sharedSecrets:
                  type: array
                  description: verifyReceipt shared secrets; the first is sent, the others accepted during a rotation.
                  items:
                    type: string
                apiKeyId:
                  type: string
                apiIssuerId:
                  type: string
                apiPrivateKey:
                  type: string
                  description: The App Store Server API key, P-256 PEM; needs `apiKeyId` and `apiIssuerId`.
                acceptSandbox:
                  type: boolean
                  description: Whether sandbox purchases are accepted (true when a new app does not say).
                restorePolicy:
                  $ref: '#/components/schemas/RestorePolicy'

            Product:
              type: object
              required:
                [bundleId, productId, type, title, entitlements, credits, content, position, createdAt, updatedAt]
              properties:
                bundleId:
                  type: string
                productId:
                  type: string
                type:
                  $ref: '#/components/schemas/ProductType'
                title:
                  type: string
                entitlements:
                  type: array
                  items:
                    type: string
                credits:
                  $ref: '#/components/schemas/Credits'
                content:
                  type: array
                  items:
                    $ref: '#/components/schemas/ContentFile'
                subscriptionGroup:
                  type: string
                durationSeconds:
                  type: integer
                  format: int64
                price:
                  type: integer
                  format: int64
                currency:
                  type: string
                position:
                  type: integer
                createdAt:
                  type: integer
                  format: int64
                updatedAt:
                  type: integer
                  format: int64
            ProductInput:
              type: object
              required: [type]
              properties:
                type:
                  $ref: '#/components/schemas/ProductType'
                title:
                  type: string
                  description: The product id (or the current title) when not given.
                entitlements:
                  type: array
                  description: What a purchase grants while it is active.
                  items:
                    type: string
                credits:
                  $ref: '#/components/schemas/Credits'
                subscriptionGroup:
                  type: string
                durationSeconds:
                  type: integer
                  format: int64
                  description: How long a non-renewing subscription lasts.
                price:
                  type: integer
                  format: int64
                  description: Milliunits of `currency`, booked when the purchase format carries no price.
                currency:
                  type: string
                position:
                  type: integer
                  description: Order in the master list (last when new and not given).

            RevenueReport:
              type: object
              required: [from, to, groupBy, rows, totals]
              properties:
                from:
                  type: integer
                  format: int64
                to:
                  type: integer
                  format: int64
                groupBy:
                  type: string
                  enum: [day, product, currency]
                rows:
                  type: array
                  items:
                    $ref: '#/components/schemas/RevenueRow'
                totals:
                  type: object
                  description: Currency to amount.
                  additionalProperties:
                    type: integer
                    format: int64
            RevenueRow:
              type: object
              required: [key, currency, amount, count]
              properties:
                key:
                  type: string
                  description: The day (`2026-11-22`), product id or currency.
                currency:
                  type: string
                amount:
                  type: integer
                  format: int64
                count:
                  type: integer

        """#

    /// A strong ETag of the document: the first 16 bytes of its SHA-256, in hex, quoted.
    static let etag =
        "\"" + SHA256.hash(data: Array(yaml.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""

    /// `GET /openapi.yaml`: the document, or 304 when the client's copy (`If-None-Match`) is current.
    @Sendable static func respond(_ request: Request, context: ServerRequestContext) -> Response {
        let bytes = ByteBuffer(string: yaml)
        // The conditional rules of downloads (RFC 9110 If-None-Match: a list, weak comparison, `*`).
        let plan = DownloadPlan.plan(
            ifNoneMatch: request.headers[values: .ifNoneMatch],
            range: nil,
            ifRange: nil,
            etag: etag,
            size: Int64(bytes.readableBytes)
        )
        let headers: HTTPFields = [.eTag: etag, .cacheControl: "no-cache"]
        if plan == .notModified { return Response(status: .notModified, headers: headers) }
        var response = Response(status: .ok, headers: headers, body: .init(byteBuffer: bytes))
        response.headers[.contentType] = "application/yaml"
        return response
    }
}
