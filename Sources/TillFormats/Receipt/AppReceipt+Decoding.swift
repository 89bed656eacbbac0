import Foundation

extension AppReceipt {
    /// Decodes a receipt payload lying at `range` in `buffer`, without copying it.
    init(payload buffer: [UInt8], range: Range<Int>, maximumDepth: Int = 32) throws(ASN1Error) {
        let reader = ASN1Reader(buffer, maximumDepth: maximumDepth)
        let set = try reader.element(at: range.lowerBound, limit: range.upperBound, expecting: ASN1Tag.set)
        guard set.end == range.upperBound else { throw .trailingData }
        self.init(opaqueValueVersion: 1)
        var offset = set.contentStart
        while offset < set.contentEnd {
            let attribute = try reader.attribute(at: offset, limit: set.contentEnd, depth: 1)
            offset = attribute.end
            let value = attribute.value
            switch attribute.type {
            case 0: receiptType = try reader.string(value, type: 0)
            case 1: appItemId = try reader.integer(value, type: 1)
            case 2: bundleId = try reader.string(value, type: 2)
            case 3: applicationVersion = try reader.string(value, type: 3)
            case 4:
                opaqueValue = Array(reader[value])
                opaqueValueVersion = attribute.version
            case 5: sha1Hash = Array(reader[value])
            case 12: receiptCreationDate = try reader.date(value, type: 12)
            case 15: downloadId = try reader.integer(value, type: 15)
            case 16: versionExternalIdentifier = try reader.integer(value, type: 16)
            case 17: inAppPurchases.append(try InAppPurchase(reader: reader, value: value, depth: 2))
            case 18: originalPurchaseDate = try reader.date(value, type: 18)
            case 19: originalApplicationVersion = try reader.string(value, type: 19)
            case 21: expirationDate = try reader.date(value, type: 21)
            default:
                otherAttributes.append(
                    ReceiptAttribute(type: attribute.type, version: attribute.version, value: reader[value]))
            }
        }
    }
}

extension InAppPurchase {
    init(reader: ASN1Reader, value: ASN1Element, depth: Int) throws(ASN1Error) {
        let set = try reader.element(at: value.contentStart, limit: value.contentEnd, expecting: ASN1Tag.set, depth: depth)
        guard set.end == value.contentEnd else { throw .invalidAttribute(type: 17) }
        var productId: String?
        var transactionId: String?
        self.init(productId: "", transactionId: "")
        var offset = set.contentStart
        while offset < set.contentEnd {
            let attribute = try reader.attribute(at: offset, limit: set.contentEnd, depth: depth + 1)
            offset = attribute.end
            let value = attribute.value
            switch attribute.type {
            case 1701: quantity = Int(try reader.integer(value, type: 1701) ?? 1)
            case 1702: productId = try reader.string(value, type: 1702)
            case 1703: transactionId = try reader.string(value, type: 1703)
            case 1704: purchaseDate = try reader.date(value, type: 1704)
            case 1705: originalTransactionId = try reader.string(value, type: 1705)
            case 1706: originalPurchaseDate = try reader.date(value, type: 1706)
            case 1707: productTypeCode = (try reader.integer(value, type: 1707)).map { Int($0) }
            case 1708: expiresDate = try reader.date(value, type: 1708)
            case 1711:
                let id = try reader.integer(value, type: 1711)
                webOrderLineItemId = id == 0 ? nil : id
            case 1712: cancellationDate = try reader.date(value, type: 1712)
            case 1713: isTrialPeriod = (try reader.integer(value, type: 1713)).map { $0 != 0 }
            case 1719: isInIntroOfferPeriod = (try reader.integer(value, type: 1719)).map { $0 != 0 }
            case 1721: promotionalOfferId = try reader.string(value, type: 1721)
            default:
                otherAttributes.append(
                    ReceiptAttribute(type: attribute.type, version: attribute.version, value: reader[value]))
            }
        }
        guard let productId, let transactionId else { throw .invalidAttribute(type: 17) }
        self.productId = productId
        self.transactionId = transactionId
    }
}

/// One `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
struct RawAttribute {
    var type: Int
    var version: Int
    var value: ASN1Element
    var end: Int
}

extension ASN1Reader {
    func attribute(at offset: Int, limit: Int, depth: Int) throws(ASN1Error) -> RawAttribute {
        let sequence = try element(at: offset, limit: limit, expecting: ASN1Tag.sequence, depth: depth)
        let type = try element(at: sequence.contentStart, limit: sequence.contentEnd, depth: depth + 1)
        let version = try element(at: type.end, limit: sequence.contentEnd, depth: depth + 1)
        let value = try element(at: version.end, limit: sequence.contentEnd, expecting: ASN1Tag.octetString, depth: depth + 1)
        guard value.end == sequence.contentEnd else { throw .trailingData }
        let typeNumber = try integer(type)
        let versionNumber = try integer(version)
        guard typeNumber >= 0, typeNumber < 1 << 31, abs(versionNumber) < 1 << 31 else { throw .integerOutOfRange }
        return RawAttribute(type: Int(typeNumber), version: Int(versionNumber), value: value, end: sequence.end)
    }

    /// The DER element inside an attribute value, which must fill it.
    private func inner(_ value: ASN1Element, type: Int) throws(ASN1Error) -> ASN1Element {
        guard let element = try? element(at: value.contentStart, limit: value.contentEnd), element.end == value.contentEnd
        else { throw .invalidAttribute(type: type) }
        return element
    }

    /// A UTF8String, IA5String or PrintableString value; nil when empty.
    func string(_ value: ASN1Element, type: Int) throws(ASN1Error) -> String? {
        if value.contentLength == 0 { return nil }
        let element = try inner(value, type: type)
        switch element.identifier {
        case ASN1Tag.utf8String, ASN1Tag.ia5String, ASN1Tag.printableString:
            return element.contentLength == 0 ? nil : String(decoding: self[element], as: UTF8.self)
        default:
            throw .invalidAttribute(type: type)
        }
    }

    /// An INTEGER value; nil when the value is empty.
    func integer(_ value: ASN1Element, type: Int) throws(ASN1Error) -> Int64? {
        if value.contentLength == 0 { return nil }
        let element = try inner(value, type: type)
        guard element.identifier == ASN1Tag.integer, let number = try? integer(element) else {
            throw .invalidAttribute(type: type)
        }
        return number
    }

    /// An RFC 3339 date in an IA5String (or UTF8String); nil when empty.
    func date(_ value: ASN1Element, type: Int) throws(ASN1Error) -> Date? {
        if value.contentLength == 0 { return nil }
        let element = try inner(value, type: type)
        guard element.identifier == ASN1Tag.ia5String || element.identifier == ASN1Tag.utf8String else {
            throw .invalidAttribute(type: type)
        }
        if element.contentLength == 0 { return nil }
        guard let seconds = ReceiptDate.parseRFC3339Seconds(bytes: self[element]) else {
            throw .invalidAttribute(type: type)
        }
        return Date(timeIntervalSince1970: Double(seconds))
    }
}
