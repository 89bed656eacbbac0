import Foundation
import HTTPTypes
import TillCore
import TillDevelopment
import TillFormats

/// Request bodies of the two servers, sent through their routers in this process. An input's first byte picks the
/// route, the rest is the body. Whatever the body, the answer is never a 5xx and every refusal is the JSON error
/// shape; a body refused for what it is gets the same refusal written with other whitespace.
enum HTTPTargets {
    // MARK: The verification server

    static let appAPI = serverTarget(
        name: "app-api",
        summary:
            "bodies of the app API's routes (submissions, restore, debits, aliases, consent, offers, downloads, the "
            + "AppTransaction)",
        routes: appRoutes,
        token: { $0.appKey }
    )

    static let adminAPI = serverTarget(
        name: "admin-api",
        summary: "bodies of the admin API's routes (apps, products, offers, introductory-offer overrides, content)",
        routes: adminRoutes,
        token: { _ in ServerWorld.operatorToken }
    )

    static let notification = serverTarget(
        name: "notification",
        summary:
            "an App Store Server Notification V2 body through POST /v1/apple/notifications: the JSON, the signed "
            + "payload, the signed transaction and renewal info inside, applied to the ledger",
        routes: [FuzzRoute(.post, "/v1/apple/notifications", [])],
        token: { _ in nil },
        extraSeeds: notificationSeeds
    )

    static var signedPro: String {
        (try? FuzzPKI.jwsSigner.sign(transaction(product: "pro", type: .nonConsumable))) ?? ""
    }
    static var signedGems: String {
        (try? FuzzPKI.jwsSigner.sign(transaction(product: "gems.100", type: .consumable))) ?? ""
    }
    /// A device's AppTransaction, as the sandbox signs it.
    static var signedAppTransaction: String {
        let app = AppTransaction(
            receiptType: .sandbox,
            bundleId: "com.example.till",
            applicationVersion: "1",
            receiptCreationDate: Date(timeIntervalSince1970: 1_738_645_560),
            originalPurchaseDate: Date(timeIntervalSince1970: 1_738_645_500),
            originalApplicationVersion: "1.0",
            deviceVerification: "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf",
            deviceVerificationNonce: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            appTransactionId: "704289572407232543",
            originalPlatform: .iOS
        )
        return (try? FuzzPKI.jwsSigner.sign(app)) ?? ""
    }

    static var appRoutes: [FuzzRoute] {
        let receipt = (try? FuzzPKI.receiptSigner().sign(Samples.receipt(purchases: 2))).map { Base64.encode($0) } ?? ""
        let transactionReceipt = Data(
            (try? TransactionReceipt.sign(
                purchaseInfo: .init(fields: [
                    "transaction-id": "160000408504141", "original-transaction-id": "160000408504141",
                    "product-id": "gems.100", "bid": "com.example.till", "quantity": "1",
                    "purchase-date-ms": "1514048624000",
                ]),
                environment: .sandbox,
                pod: "100",
                privateKey: FuzzPKI.receipt.leafKey.rsa!,
                certificateDER: FuzzPKI.receiptLeafDER
            ).encodedBytes()) ?? []
        ).base64EncodedString()
        return [
            FuzzRoute(
                .post,
                "/v1/receipts",
                [
                    #"{"customerId":"alice","signedTransaction":"\#(signedPro)"}"#,
                    #"{"customerId":"bob","signedTransaction":"\#(signedGems)","idempotencyKey":"k-1"}"#,
                    #"{"customerId":"carol","receipt":"\#(receipt)"}"#,
                    #"{"customerId":"dave","transactionReceipt":"\#(transactionReceipt)"}"#,
                ]
            ),
            FuzzRoute(.post, "/v1/customers/alice/restore", [#"{"signedTransaction":"\#(signedPro)"}"#]),
            FuzzRoute(.post, "/v1/customers/alice/debits", [#"{"credit":"gems","amount":30,"requestId":"order-17"}"#]),
            FuzzRoute(.post, "/v1/customers/alice/aliases", [#"{"customerId":"device-6F1C"}"#]),
            FuzzRoute(.put, "/v1/customers/alice/consumption-consent", [#"{"consented":true}"#]),
            FuzzRoute(
                .post,
                "/v1/customers/alice/offers/promotional",
                [
                    #"{"productId":"premium.monthly","offerIdentifier":"loyal","format":"signature","appAccountToken":"16071b71-b379-4c9c-8173-8d5024222b8c"}"#,
                    #"{"productId":"premium.monthly","offerIdentifier":"loyal","format":"jws"}"#,
                ]
            ),
            FuzzRoute(
                .post,
                "/v1/customers/alice/offers/introductory-eligibility",
                [#"{"productId":"premium.monthly","appTransactionId":"704289572311559935"}"#]
            ),
            FuzzRoute(.post, "/v1/customers/alice/downloads", [#"{"productId":"pro"}"#]),
            // Last, so that the first byte of the inputs in Regressions/app-api still picks the route it picked.
            FuzzRoute(
                .put,
                "/v1/customers/alice/app-transaction",
                [#"{"signedAppTransaction":"\#(signedAppTransaction)"}"#]
            ),
        ]
    }

    static let adminRoutes: [FuzzRoute] = [
        FuzzRoute(
            .post,
            "/admin/v1/apps",
            [
                #"{"bundleId":"com.example.magazine","appAppleId":1234567891,"name":"Magazine","sharedSecrets":["0123456789abcdef"],"acceptSandbox":true,"restorePolicy":"keepWithFirstOwner"}"#,
                #"{"bundleId":"com.example.other","consumption":{"sampleContentProvided":true,"refundPreference":"DECLINE"}}"#,
            ]
        ),
        FuzzRoute(
            .patch,
            "/admin/v1/apps/com.example.till",
            [
                #"{"sharedSecrets":["new0123456789","old0123456789"]}"#, #"{"storeKitTestCertificates":[]}"#,
                #"{"restorePolicy":"transferToLatest","acceptSandbox":false}"#,
            ]
        ),
        FuzzRoute(
            .put,
            "/admin/v1/apps/com.example.till/products/issue.42",
            [
                #"{"type":"nonConsumable","title":"Issue 42","entitlements":["issue-42"],"price":2990,"currency":"USD"}"#,
                #"{"type":"consumable","title":"500 coins","credits":{"coins":500},"price":4990,"currency":"USD"}"#,
                #"{"type":"nonRenewing","title":"Season","entitlements":["season"],"durationSeconds":7776000}"#,
            ]
        ),
        FuzzRoute(
            .put,
            "/admin/v1/apps/com.example.till/products/premium.monthly/offers/loyal",
            [#"{"eligibility":"currentOrLapsedSubscribers"}"#]
        ),
        FuzzRoute(
            .put,
            "/admin/v1/apps/com.example.till/customers/alice/introductory-offers/premium",
            [#"{"allowIntroductoryOffer":true}"#]
        ),
        FuzzRoute(.put, "/admin/v1/apps/com.example.till/products/pro/content/book.pdf", ["%PDF-1.4 hello"]),
    ]

    /// A signed transaction of the fuzz world's app.
    static func transaction(product: String, type: TransactionType) -> JWSTransactionDecodedPayload {
        var transaction = Samples.transaction()
        transaction.productId = product
        transaction.type = type
        if type != .autoRenewableSubscription {
            transaction.expiresDate = nil
            transaction.subscriptionGroupIdentifier = nil
            transaction.webOrderLineItemId = nil
        }
        return transaction
    }

    static func notificationSeeds() async throws -> [FuzzSeed] {
        let subscription = try FuzzPKI.jwsSigner.sign(
            transaction(product: "premium.monthly", type: .autoRenewableSubscription)
        )
        let renewal = FuzzJWS.sign(payloadJSON: Array(JWSTarget.samplePayloads[0].1.utf8))
        func body(_ payload: String) -> [UInt8] {
            [0] + Array(#"{"signedPayload":"\#(FuzzJWS.sign(payloadJSON: Array(payload.utf8)))"}"#.utf8)
        }
        func notification(_ type: String, _ subtype: String?, uuid: String, data: String) -> String {
            let subtypeField = subtype.map { #""subtype":"\#($0)","# } ?? ""
            return
                #"{"notificationType":"\#(type)",\#(subtypeField)"notificationUUID":"\#(uuid)","version":"2.0","signedDate":1738645561000,"data":{"appAppleId":1234567890,"bundleId":"com.example.till","bundleVersion":"1","environment":"Sandbox",\#(data)}}"#
        }
        var seeds: [FuzzSeed] = [
            FuzzSeed(
                "sample-did-renew",
                body(
                    notification(
                        "DID_RENEW",
                        nil,
                        uuid: "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
                        data:
                            #""signedTransactionInfo":"\#(subscription)","signedRenewalInfo":"\#(renewal)","status":1"#
                    )
                )
            ),
            FuzzSeed(
                "sample-refund",
                body(
                    notification(
                        "REFUND",
                        nil,
                        uuid: "102e14d5-51f5-4503-b5a8-c3a1af68eb20",
                        data: #""signedTransactionInfo":"\#(signedGems)""#
                    )
                )
            ),
            FuzzSeed(
                "sample-consumption-request",
                body(
                    notification(
                        "CONSUMPTION_REQUEST",
                        nil,
                        uuid: "202e14d5-51f5-4503-b5a8-c3a1af68eb20",
                        data:
                            #""signedTransactionInfo":"\#(signedGems)","consumptionRequestReason":"UNINTENDED_PURCHASE""#
                    )
                )
            ),
            FuzzSeed(
                "sample-test",
                body(notification("TEST", nil, uuid: "302e14d5-51f5-4503-b5a8-c3a1af68eb20", data: #""status":1"#))
            ),
            FuzzSeed(
                "sample-summary",
                body(
                    #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"402e14d5-51f5-4503-b5a8-c3a1af68eb20","version":"2.0","signedDate":1738645561000,"summary":{"requestIdentifier":"7e3fb20b-4cdb-47cc-936d-99d65f608138","environment":"Sandbox","appAppleId":1234567890,"bundleId":"com.example.till","productId":"premium.monthly","storefrontCountryCodes":["USA"],"succeededCount":5,"failedCount":1}}"#
                )
            ),
        ]
        for (path, bytes) in AppleVectors.files(under: "apple-library/models") where path.contains("Notification.json")
        {
            seeds.append(
                FuzzSeed(
                    AppleVectors.seedName(path),
                    [0] + Array(#"{"signedPayload":"\#(FuzzJWS.sign(payloadJSON: bytes))"}"#.utf8)
                )
            )
        }
        return seeds
    }

    static func serverTarget(
        name: String,
        summary: String,
        routes: @autoclosure @escaping @Sendable () -> [FuzzRoute],
        token: @escaping @Sendable (ServerWorld) -> String?,
        extraSeeds: @escaping @Sendable () async throws -> [FuzzSeed] = { [] }
    ) -> FuzzTarget {
        let table = LazyRoutes(routes)
        return FuzzTarget(
            name: name,
            summary: summary,
            maximumLength: 64 * 1024,
            seeds: { try await extraSeeds() + seeds(table.routes) },
            check: { bytes in
                let routes = table.routes
                guard let input = RouteInput(bytes, routes: routes.count) else { return }
                let world = try await ServerWorld.shared.get()
                let route = routes[input.route]
                var headers = HTTPFields()
                if let token = token(world) { headers[.authorization] = "Bearer \(token)" }
                let what = "\(route.method) \(route.path)"
                let reply = try await world.http.call(route.method, route.path, headers: headers, body: input.body)
                try HTTPProperties.checkAnswer(reply, what)
                try await HTTPProperties.checkIgnoredBytes(input, first: reply, what) {
                    try await world.http.call(route.method, route.path, headers: headers, body: $0)
                }
            },
            mutate: { input, random, bytes in HTTPProperties.mutate(input, routes: table.routes.count, &random, bytes) }
        )
    }

    // MARK: The simulator

    static let simulatorStoreKit = simulatorTarget(
        name: "simulator-storekit",
        summary: "bodies of the simulator's StoreKit routes (products, payments, offer codes, restore, subscriptions)",
        routes: [
            FuzzRoute(
                .post,
                "/storekit/sandbox/products",
                [
                    #"{"bundleId":"$BUNDLE","productIdentifiers":["pro","gems.100","premium.monthly"],"deviceId":"$DEVICE","locale":"en_US"}"#
                ]
            ),
            FuzzRoute(
                .post,
                "/storekit/sandbox/payments",
                [
                    #"{"deviceId":"$DEVICE","bundleId":"$BUNDLE","productId":"gems.100","quantity":2,"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138"}"#,
                    #"{"deviceId":"$DEVICE","bundleId":"$BUNDLE","productId":"pro","userAction":"cancel"}"#,
                    #"{"deviceId":"$DEVICE","bundleId":"$BUNDLE","productId":"premium.monthly","introductoryOfferEligibility":"eligible","promotionalOffer":{"offerIdentifier":"loyal","keyIdentifier":"KEY","nonce":"7e3fb20b-4cdb-47cc-936d-99d65f608138","timestamp":1738645560000,"signature":"AAAA"}}"#,
                ]
            ),
            FuzzRoute(
                .post,
                "/storekit/sandbox/devices/$DEVICE/offer-codes/redeem",
                [#"{"bundleId":"$BUNDLE","code":"SPRING"}"#]
            ),
            FuzzRoute(.post, "/storekit/sandbox/devices/$DEVICE/restore", [#"{"bundleId":"$BUNDLE"}"#]),
            FuzzRoute(
                .post,
                "/storekit/sandbox/devices/$DEVICE/subscriptions/$ORIGINAL/auto-renew",
                [#"{"enabled":false}"#]
            ),
            FuzzRoute(
                .post,
                "/storekit/sandbox/devices/$DEVICE/subscriptions/$ORIGINAL/price-consent",
                [#"{"accept":true}"#]
            ),
            FuzzRoute(
                .post,
                "/storekit/sandbox/devices/$DEVICE/subscriptions/$ORIGINAL/retention-message?bundleId=$BUNDLE",
                [#"{"locale":"en-US"}"#]
            ),
        ]
    )

    static let simulatorAdmin = simulatorTarget(
        name: "simulator-admin",
        summary:
            "bodies of the simulator's admin routes (apps, products, offers, accounts, devices, refunds, the clock, "
            + "faults, price increases, consent, external purchase tokens)",
        routes: [
            FuzzRoute(
                .post,
                "/admin/v1/apps",
                [#"{"bundleId":"com.example.other","name":"Other","sharedSecret":"s","gracePeriodDays":16}"#]
            ),
            FuzzRoute(
                .patch,
                "/admin/v1/apps/$APP",
                [#"{"notificationUrlSandbox":"http://127.0.0.1:9/v1/apple/notifications","gracePeriodDays":16}"#]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/apps/$APP/products",
                [
                    #"{"productId":"premium.yearly","type":"autoRenewable","subscriptionGroup":"premium","subscriptionPeriod":"P1Y","price":9990,"currency":"USD"}"#,
                    #"{"productId":"coins","type":"consumable","prices":{"USA":{"price":990,"currency":"USD"}},"localizations":{"en-US":{"title":"Coins","description":"Some"}}}"#,
                ]
            ),
            FuzzRoute(.patch, "/admin/v1/apps/$APP/products/pro", [#"{"price":5990,"reviewState":"approved"}"#]),
            FuzzRoute(
                .post,
                "/admin/v1/apps/$APP/products/premium.monthly/offers",
                [
                    #"{"kind":"promotional","offerIdentifier":"loyal","discountType":"PAY_UP_FRONT","duration":"P1Y","price":4990}"#,
                    #"{"kind":"introductory","discountType":"FREE_TRIAL","duration":"P1W","periods":1}"#,
                    #"{"kind":"offerCode","offerIdentifier":"spring","discountType":"PAY_AS_YOU_GO","duration":"P1M","periods":3,"price":490,"customCode":"SPRING","redemptionLimit":10}"#,
                ]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/apps/$APP/products/premium.monthly/offers/offerCode/spring/codes",
                [#"{"count":3}"#]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/accounts",
                [
                    #"{"environment":"Sandbox","email":"a@example.com","storefront":"USA","askToBuy":false,"paymentFailure":0}"#
                ]
            ),
            FuzzRoute(.patch, "/admin/v1/accounts/$ACCOUNT", [#"{"canMakePayments":false,"storefront":"FRA"}"#]),
            FuzzRoute(
                .post,
                "/admin/v1/accounts/$ACCOUNT/devices",
                [#"{"name":"iPhone","vendorIdentifier":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}"#]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/transactions/$TRANSACTION/refund",
                [#"{"reason":1}"#, #"{"reason":0,"percentage":50}"#]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/transactions/$TRANSACTION/refund-request",
                [#"{"reason":"UNINTENDED_PURCHASE"}"#]
            ),
            FuzzRoute(.post, "/admin/v1/subscriptions/$ORIGINAL/auto-renew", [#"{"enabled":false}"#]),
            FuzzRoute(.post, "/admin/v1/clock/advance", [#"{"seconds":301}"#]),
            FuzzRoute(.put, "/admin/v1/clock/rate", [#"{"rate":"realtime"}"#, #"{"monthSeconds":300}"#]),
            FuzzRoute(
                .post,
                "/admin/v1/faults",
                [#"{"environment":"sandbox","endpoint":"verifyReceipt","kind":"latency","milliseconds":[10,20]}"#]
            ),
            FuzzRoute(
                .post,
                "/admin/v1/apps/$APP/products/premium.monthly/price-increase",
                [#"{"storefront":"USA","price":1290,"requiresConsent":true}"#]
            ),
            FuzzRoute(.post, "/admin/v1/accounts/$ACCOUNT/rescind-consent", [#"{"bundleId":"$BUNDLE"}"#]),
            FuzzRoute(
                .post,
                "/admin/v1/apps/$APP/external-purchase-tokens",
                [#"{"environment":"Sandbox","subtype":"UNREPORTED","tokenType":"SERVICES"}"#]
            ),
            FuzzRoute(.post, "/admin/v1/apps/$APP/retention/message/m1/review", [#"{"state":"APPROVED"}"#]),
        ]
    )

    static func simulatorTarget(name: String, summary: String, routes: [FuzzRoute]) -> FuzzTarget {
        FuzzTarget(
            name: name,
            summary: summary,
            maximumLength: 64 * 1024,
            seeds: { seeds(routes) },
            check: { bytes in
                guard let input = RouteInput(bytes, routes: routes.count) else { return }
                let world = try await SimulatorWorld.shared.get()
                let route = routes[input.route]
                let path = world.resolve(route.path)
                let what = "\(route.method) \(route.path)"
                let reply = try await world.http.call(route.method, path, body: world.resolve(input.body))
                try HTTPProperties.checkAnswer(reply, what)
                try await HTTPProperties.checkIgnoredBytes(input, first: reply, what) {
                    try await world.http.call(route.method, path, body: world.resolve($0))
                }
            },
            mutate: { input, random, bytes in HTTPProperties.mutate(input, routes: routes.count, &random, bytes) }
        )
    }

    static func seeds(_ routes: [FuzzRoute]) -> [FuzzSeed] {
        var seeds: [FuzzSeed] = []
        for (index, route) in routes.enumerated() {
            for (number, body) in route.seeds.enumerated() {
                let name = route.path.split(separator: "/").last.map(String.init) ?? "root"
                seeds.append(FuzzSeed("route\(index)-\(name.prefix(24))-\(number)", [UInt8(index)] + Array(body.utf8)))
            }
        }
        return seeds
    }
}

/// A route table made on first use (its seeds sign with the fuzz keys).
final class LazyRoutes: Sendable {
    private let make: @Sendable () -> [FuzzRoute]
    private let cache = LockedBox<[FuzzRoute]?>(nil)

    init(_ make: @escaping @Sendable () -> [FuzzRoute]) { self.make = make }

    var routes: [FuzzRoute] {
        cache.withLock { cached in
            if let cached { return cached }
            let made = make()
            cached = made
            return made
        }
    }
}
