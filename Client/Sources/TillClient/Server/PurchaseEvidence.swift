/// What StoreKit gives an app as proof of a purchase: one of the three formats `POST /v1/receipts` accepts.
public enum PurchaseEvidence: Sendable, Hashable, Codable {
    /// The app receipt, base64 (PKCS#7): every purchase of the device's account.
    case appReceipt(String)
    /// An iOS 6-style `SKPaymentTransaction.transactionReceipt`, base64.
    case transactionReceipt(String)
    /// A StoreKit 2 signed transaction (`jwsRepresentation`).
    case signedTransaction(String)

    /// The field of the submission that carries it.
    public var field: String {
        switch self {
        case .appReceipt: "receipt"
        case .transactionReceipt: "transactionReceipt"
        case .signedTransaction: "signedTransaction"
        }
    }

    /// The text sent.
    public var payload: String {
        switch self {
        case .appReceipt(let value), .transactionReceipt(let value), .signedTransaction(let value): value
        }
    }

    init?(field: String, payload: String) {
        switch field {
        case "receipt": self = .appReceipt(payload)
        case "transactionReceipt": self = .transactionReceipt(payload)
        case "signedTransaction": self = .signedTransaction(payload)
        default: return nil
        }
    }

    private enum CodingKeys: String, CodingKey {
        case format
        case payload
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decode(String.self, forKey: .format)
        guard let value = PurchaseEvidence(field: format, payload: try container.decode(String.self, forKey: .payload))
        else {
            throw DecodingError.dataCorruptedError(
                forKey: .format,
                in: container,
                debugDescription: "unknown evidence format \(format)"
            )
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(field, forKey: .format)
        try container.encode(payload, forKey: .payload)
    }
}
