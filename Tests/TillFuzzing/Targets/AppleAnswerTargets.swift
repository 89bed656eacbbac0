import Foundation
import TillCore
import TillFormats

/// Apple's answers, which a man in the middle or a bug at Apple can change: verifyReceipt's JSON and the App Store
/// Server API's bodies, read with the decoders the server reads them with.
enum AppleAnswerTargets {
    static let verifyReceipt = FuzzTarget(
        name: "verify-receipt-answer",
        summary:
            "a verifyReceipt answer decoded as VerifyReceiptResponse (the server's JSONDecoder), its status "
            + "classified and its purchases read",
        maximumLength: 64 * 1024,
        seeds: verifyReceiptSeeds,
        check: checkVerifyReceipt,
        mutate: { input, random, bytes in FuzzJWS.payloadMutator.mutate(input, &random, bytes) }
    )

    static let serverAPI = FuzzTarget(
        name: "server-api-answer",
        summary:
            "an App Store Server API answer (first byte: which of its thirteen bodies) decoded with the decoder the "
            + "server uses, and the signed transactions inside verified under the fuzz root",
        maximumLength: 64 * 1024,
        seeds: serverAPISeeds,
        check: checkServerAPI,
        mutate: { input, random, bytes in
            HTTPProperties.mutate(input, routes: serverAPIBodies.count, &random, bytes)
        }
    )

    // MARK: verifyReceipt

    static func checkVerifyReceipt(_ bytes: [UInt8]) async throws {
        try await checkJSON(VerifyReceiptResponse.self, bytes, decoder: JSONDecoder()) { response in
            _ = response.status.action(isRetryable: response.isRetryable)
            _ = response.status.meaning
            for entry in (response.receipt?.inApp ?? []) + (response.latestReceiptInfo ?? []) {
                _ = (entry.transactionId, entry.productId, entry.purchaseDate, entry.expiresDate, entry.quantity)
            }
        }
    }

    static func verifyReceiptSeeds() async throws -> [FuzzSeed] {
        let encoder = JSONEncoder()
        let receipt = Samples.receipt(purchases: 3)
        let info = ReceiptInfoJSON(receipt)
        var seeds: [FuzzSeed] = []
        for (name, response) in [
            (
                "valid",
                VerifyReceiptResponse(
                    status: .valid,
                    environment: .sandbox,
                    receipt: info,
                    latestReceiptInfo: info.inApp
                )
            ),
            ("sandbox-receipt", VerifyReceiptResponse(status: ReceiptStatus(rawValue: 21007))),
            ("retryable", VerifyReceiptResponse(status: ReceiptStatus(rawValue: 21199), isRetryable: true)),
        ] {
            seeds.append(FuzzSeed("sample-\(name)", Array(try encoder.encode(response))))
        }
        return seeds
    }

    // MARK: Server API

    /// The Server API's bodies, each with the decoder the server (or TillFormats' callers) read it with.
    static let serverAPIBodies: [(name: String, check: @Sendable ([UInt8]) async throws -> Void)] = [
        (
            "TransactionInfoResponse",
            {
                try await checkJSON(TransactionInfoResponse.self, $0, decoder: JSONDecoder()) {
                    try await verify($0.signedTransactionInfo.map { [$0] })
                }
            }
        ),
        (
            "HistoryResponse",
            {
                try await checkJSON(HistoryResponse.self, $0, decoder: AppleJSON.makeDecoder()) {
                    try await verify($0.signedTransactions)
                }
            }
        ),
        (
            "NotificationHistoryResponse",
            { try await checkJSON(NotificationHistoryResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
        ("StatusResponse", { try await checkJSON(StatusResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }),
        ("APIError", { try await checkJSON(APIError.self, $0, decoder: JSONDecoder()) { _ = $0.code } }),
        (
            "RefundHistoryResponse",
            {
                try await checkJSON(RefundHistoryResponse.self, $0, decoder: AppleJSON.makeDecoder()) {
                    try await verify($0.signedTransactions)
                }
            }
        ),
        (
            "OrderLookupResponse",
            {
                try await checkJSON(OrderLookupResponse.self, $0, decoder: AppleJSON.makeDecoder()) {
                    try await verify($0.signedTransactions)
                }
            }
        ),
        (
            "AppTransactionInfoResponse",
            { try await checkJSON(AppTransactionInfoResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
        (
            "ExtendRenewalDateResponse",
            { try await checkJSON(ExtendRenewalDateResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
        (
            "MassExtendRenewalDateResponse",
            { try await checkJSON(MassExtendRenewalDateResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
        (
            "MassExtendRenewalDateStatusResponse",
            {
                try await checkJSON(MassExtendRenewalDateStatusResponse.self, $0, decoder: AppleJSON.makeDecoder()) {
                    _ in
                }
            }
        ),
        (
            "CheckTestNotificationResponse",
            { try await checkJSON(CheckTestNotificationResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
        (
            "SendTestNotificationResponse",
            { try await checkJSON(SendTestNotificationResponse.self, $0, decoder: AppleJSON.makeDecoder()) { _ in } }
        ),
    ]

    static func checkServerAPI(_ bytes: [UInt8]) async throws {
        guard let input = RouteInput(bytes, routes: serverAPIBodies.count) else { return }
        try await serverAPIBodies[input.route].check(input.body)
    }

    /// Signed transactions inside an answer verify, or not, without trapping; the open and constrained verdicts agree.
    static func verify(_ transactions: [String]?) async throws {
        for jws in (transactions ?? []).prefix(8) {
            let open = await JWSTarget.openVerifier.verify(jws, as: JWSTransactionDecodedPayload.self)
            if case .valid(let verified) = open { _ = verified.payload.purchaseTransaction() }
        }
    }

    static func serverAPISeeds() async throws -> [FuzzSeed] {
        let transaction = try FuzzPKI.jwsSigner.sign(Samples.transaction())
        var seeds: [FuzzSeed] = []
        func add(_ name: String, _ json: String) {
            guard let index = serverAPIBodies.firstIndex(where: { $0.name == name }) else { return }
            seeds.append(FuzzSeed("sample-\(name)", [UInt8(index)] + Array(json.utf8)))
        }
        add("TransactionInfoResponse", #"{"signedTransactionInfo":"\#(transaction)"}"#)
        add(
            "HistoryResponse",
            #"{"revision":"revision_output","hasMore":true,"bundleId":"com.example.till","appAppleId":1234567890,"environment":"Sandbox","signedTransactions":["\#(transaction)","\#(transaction)"]}"#
        )
        add("APIError", #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#)
        add("RefundHistoryResponse", #"{"signedTransactions":["\#(transaction)"],"revision":"r","hasMore":false}"#)
        // Apple's own examples of each body, matched by their file names.
        let files: [(String, String)] = [
            ("transactionInfoResponse", "TransactionInfoResponse"), ("transactionHistoryResponse", "HistoryResponse"),
            ("getNotificationHistoryResponse", "NotificationHistoryResponse"),
            ("getAllSubscriptionStatusesResponse", "StatusResponse"), ("Error", "APIError"), ("Exception", "APIError"),
            ("getRefundHistoryResponse", "RefundHistoryResponse"), ("lookupOrderIdResponse", "OrderLookupResponse"),
            ("appTransactionInfoResponse", "AppTransactionInfoResponse"),
            ("extendSubscriptionRenewalDateResponse", "ExtendRenewalDateResponse"),
            ("extendRenewalDateForAllActiveSubscribersResponse", "MassExtendRenewalDateResponse"),
            ("getStatusOfSubscriptionRenewalDateExtensionsResponse", "MassExtendRenewalDateStatusResponse"),
            ("getTestNotificationStatusResponse", "CheckTestNotificationResponse"),
            ("requestTestNotificationResponse", "SendTestNotificationResponse"),
        ]
        for (path, bytes) in AppleVectors.files(under: "apple-library/models") {
            guard let (_, name) = files.first(where: { path.contains($0.0) }),
                let index = serverAPIBodies.firstIndex(where: { $0.name == name })
            else { continue }
            seeds.append(FuzzSeed(AppleVectors.seedName(path), [UInt8(index)] + bytes))
        }
        return seeds
    }

    // MARK: Properties of a JSON body

    /// Decodes `bytes` as `T`; when it decodes: what `use` does with it must not trap, the value encoded again
    /// decodes to itself, and the same text with other whitespace (and, without duplicate keys, members in the
    /// opposite order) decodes to the same value. When it does not decode, neither does the reformatted text.
    static func checkJSON<T: Codable & Hashable>(
        _ type: T.Type,
        _ bytes: [UInt8],
        decoder: JSONDecoder,
        use: (T) async throws -> Void
    ) async throws {
        let value = try? decoder.decode(T.self, from: Data(bytes))
        if let tree = JSONTree.parse(bytes) {
            var random = FuzzRandom(seed: UInt64(bytes.count))
            let variant = tree.reformatted(&random, reversed: !tree.hasDuplicateKeys)
            let other = try? decoder.decode(T.self, from: Data(variant))
            try require(
                other == value,
                "ignored bytes",
                "\(T.self): \(String(describing: value)) as written, \(String(describing: other)) reformatted"
            )
        }
        guard let value else { return }
        try await use(value)
        guard let encoded = try? AppleJSON.makeEncoder().encode(value) else {
            throw PropertyViolation("round trip", "\(T.self) \(value) cannot be encoded")
        }
        let again = try? decoder.decode(T.self, from: encoded)
        try require(
            again == value,
            "round trip",
            "\(T.self): \(value)\nencoded \(String(decoding: encoded.prefix(600), as: UTF8.self))\ndecodes as \(String(describing: again))"
        )
    }
}
