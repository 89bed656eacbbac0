import Foundation

extension AppReceipt {
    /// Decodes a receipt payload lying at `range` in `buffer` (DER), without copying it; more than
    /// `maximumPurchases` in-app purchases are refused.
    init(payload buffer: [UInt8], range: Range<Int>, maximumPurchases: Int = 4_096) throws(ASN1Error) {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { throw .truncated }
        self = try buffer.withUnsafeBufferPointer { pointer throws(ASN1Error) in
            try AppReceipt(
                scanner: DERScanner(base: pointer),
                buffer: buffer,
                range: range,
                maximumPurchases: maximumPurchases
            )
        }
    }

    private init(scanner: DERScanner, buffer: [UInt8], range: Range<Int>, maximumPurchases: Int) throws(ASN1Error) {
        let set = try scanner.expect(ASN1Tag.set, at: range.lowerBound, limit: range.upperBound)
        guard set.contentEnd == range.upperBound else { throw .trailingData }
        self.init(opaqueValueVersion: 1)
        var offset = set.contentStart
        while offset < set.contentEnd {
            let attribute = try scanner.attribute(at: offset, limit: set.contentEnd)
            offset = attribute.end
            let value = attribute.value
            switch attribute.type {
            case 0: receiptType = try scanner.string(value, type: 0)
            case 1: appItemId = try scanner.integer(value, type: 1)
            case 2: bundleId = try scanner.string(value, type: 2)
            case 3: applicationVersion = try scanner.string(value, type: 3)
            case 4:
                opaqueValue = Array(buffer[value])
                opaqueValueVersion = attribute.version
            case 5: sha1Hash = Array(buffer[value])
            case 12: receiptCreationDate = try scanner.date(value, type: 12)
            case 15: downloadId = try scanner.integer(value, type: 15)
            case 16: versionExternalIdentifier = try scanner.integer(value, type: 16)
            case 17:
                guard inAppPurchases.count < maximumPurchases else { throw .tooManyPurchases(limit: maximumPurchases) }
                if inAppPurchases.isEmpty { inAppPurchases.reserveCapacity(16) }
                inAppPurchases.append(try InAppPurchase(scanner: scanner, buffer: buffer, value: value))
            case 18: originalPurchaseDate = try scanner.date(value, type: 18)
            case 19: originalApplicationVersion = try scanner.string(value, type: 19)
            case 21: expirationDate = try scanner.date(value, type: 21)
            default:
                otherAttributes.append(
                    ReceiptAttribute(type: attribute.type, version: attribute.version, slice: buffer[value])
                )
            }
        }
    }
}

extension InAppPurchase {
    init(scanner: DERScanner, buffer: [UInt8], value: Range<Int>) throws(ASN1Error) {
        let set = try scanner.expect(ASN1Tag.set, at: value.lowerBound, limit: value.upperBound)
        guard set.contentEnd == value.upperBound else { throw .invalidAttribute(type: 17) }
        var productId: String?
        var transactionId: String?
        self.init(productId: "", transactionId: "")
        var offset = set.contentStart
        while offset < set.contentEnd {
            let attribute = try scanner.attribute(at: offset, limit: set.contentEnd)
            offset = attribute.end
            let value = attribute.value
            switch attribute.type {
            case 1701: quantity = Int(try scanner.integer(value, type: 1701) ?? 1)
            case 1702: productId = try scanner.string(value, type: 1702)
            case 1703: transactionId = try scanner.string(value, type: 1703)
            case 1704: purchaseDate = try scanner.date(value, type: 1704)
            case 1705: originalTransactionId = try scanner.string(value, type: 1705)
            case 1706: originalPurchaseDate = try scanner.date(value, type: 1706)
            case 1707: productTypeCode = (try scanner.integer(value, type: 1707)).map { Int($0) }
            case 1708: expiresDate = try scanner.date(value, type: 1708)
            case 1711:
                let id = try scanner.integer(value, type: 1711)
                webOrderLineItemId = id == 0 ? nil : id
            case 1712: cancellationDate = try scanner.date(value, type: 1712)
            case 1713: isTrialPeriod = (try scanner.integer(value, type: 1713)).map { $0 != 0 }
            case 1719: isInIntroOfferPeriod = (try scanner.integer(value, type: 1719)).map { $0 != 0 }
            case 1721: promotionalOfferId = try scanner.string(value, type: 1721)
            default:
                if otherAttributes.isEmpty { otherAttributes.reserveCapacity(8) }
                otherAttributes.append(
                    ReceiptAttribute(type: attribute.type, version: attribute.version, slice: buffer[value])
                )
            }
        }
        guard let productId, let transactionId else { throw .invalidAttribute(type: 17) }
        self.productId = productId
        self.transactionId = transactionId
    }
}

extension DERScanner {
    @inline(__always)
    func date(_ value: Range<Int>, type: Int) throws(ASN1Error) -> Date? {
        try dateSeconds(value, type: type).map { Date(timeIntervalSince1970: Double($0)) }
    }
}

extension ReceiptAttribute {
    /// An attribute whose value shares the receipt's storage.
    init(type: Int, version: Int, slice: ArraySlice<UInt8>) {
        self.type = type
        self.version = version
        self.value = slice
    }
}
