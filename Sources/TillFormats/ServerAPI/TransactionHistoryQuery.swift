import Foundation
import TillCore

/// The query parameters of Get Transaction History (`GET /inApps/v2/history/{transactionId}`).
///
/// ```
/// startDate=123455&endDate=123456&productId=com.example.1&productId=com.example.2
/// &productType=CONSUMABLE&sort=ASCENDING&subscriptionGroupIdentifier=sub_group_id
/// &inAppOwnershipType=FAMILY_SHARED&revoked=false&revision=revision_input
/// ```
///
/// ``queryItems`` lists the parameters in the order of Apple's clients (above); dates are epoch
/// milliseconds; `productId`, `productType` and `subscriptionGroupIdentifier` repeat.
public struct TransactionHistoryQuery: Sendable, Hashable {
    /// The `revision` of the previous page's response; nil for the first page.
    public var revision: String?
    public var startDate: Date?
    public var endDate: Date?
    public var productIds: [String]
    public var productTypes: [TransactionHistoryProductType]
    /// Order by modification date; Apple's default is ascending.
    public var sort: TransactionHistoryOrder?
    public var subscriptionGroupIdentifiers: [String]
    public var inAppOwnershipType: Ownership?
    /// True: only revoked transactions; false: only not revoked; nil: both.
    public var revoked: Bool?

    public init(
        revision: String? = nil,
        startDate: Date? = nil,
        endDate: Date? = nil,
        productIds: [String] = [],
        productTypes: [TransactionHistoryProductType] = [],
        sort: TransactionHistoryOrder? = nil,
        subscriptionGroupIdentifiers: [String] = [],
        inAppOwnershipType: Ownership? = nil,
        revoked: Bool? = nil
    ) {
        self.revision = revision
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// The parameters as name/value pairs, in the order Apple's clients send them.
    public var queryItems: [(String, String)] {
        var items: [(String, String)] = []
        if let startDate { items.append(("startDate", String(startDate.millisecondsSince1970))) }
        if let endDate { items.append(("endDate", String(endDate.millisecondsSince1970))) }
        items += productIds.map { ("productId", $0) }
        items += productTypes.map { ("productType", $0.rawValue) }
        if let sort { items.append(("sort", sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { items.append(("inAppOwnershipType", inAppOwnershipType.rawValue)) }
        if let revoked { items.append(("revoked", revoked ? "true" : "false")) }
        if let revision { items.append(("revision", revision)) }
        return items
    }

    /// The parameters as a query string (without `?`).
    public var queryString: String { QueryString.format(queryItems) }

    /// Parses parameters as the App Store does, throwing the error body it answers with:
    /// `invalidStartDate`/`invalidEndDate` for a date that is not epoch milliseconds (or lies millions of years away),
    /// `invalidProductType`, `invalidSort`, `invalidInAppOwnershipType` for a value Apple does not
    /// define, `invalidRevoked` for anything but `true`/`false`. Unknown names are ignored; a
    /// single-valued name given twice keeps the last value.
    public init(queryItems: [(String, String)]) throws(APIError) {
        self.init()
        for (name, value) in queryItems {
            switch name {
            case "revision":
                revision = value
            case "startDate":
                guard let ms = Int64(value), Date.acceptedMilliseconds.contains(ms) else {
                    throw APIError(.invalidStartDate)
                }
                startDate = Date(millisecondsSince1970: ms)
            case "endDate":
                guard let ms = Int64(value), Date.acceptedMilliseconds.contains(ms) else {
                    throw APIError(.invalidEndDate)
                }
                endDate = Date(millisecondsSince1970: ms)
            case "productId":
                productIds.append(value)
            case "productType":
                let type = TransactionHistoryProductType(rawValue: value)
                guard TransactionHistoryProductType.known.contains(type) else { throw APIError(.invalidProductType) }
                productTypes.append(type)
            case "sort":
                let order = TransactionHistoryOrder(rawValue: value)
                guard TransactionHistoryOrder.known.contains(order) else { throw APIError(.invalidSort) }
                sort = order
            case "subscriptionGroupIdentifier":
                subscriptionGroupIdentifiers.append(value)
            case "inAppOwnershipType":
                let ownership = Ownership(rawValue: value)
                guard ownership == .purchased || ownership == .familyShared else {
                    throw APIError(.invalidInAppOwnershipType)
                }
                inAppOwnershipType = ownership
            case "revoked":
                switch value {
                case "true": revoked = true
                case "false": revoked = false
                default: throw APIError(.invalidRevoked)
                }
            default:
                continue
            }
        }
    }

    /// Parses a query string (without `?`); see ``init(queryItems:)``.
    public init(queryString: String) throws(APIError) {
        try self.init(queryItems: QueryString.parse(queryString))
    }
}
