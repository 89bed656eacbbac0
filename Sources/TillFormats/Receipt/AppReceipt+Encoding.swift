import Crypto
import Foundation

extension AppReceipt {
    /// The DER payload: a SET OF attributes, sorted by encoding as DER requires (so not by type).
    ///
    /// Absent values are left out, except where the App Store writes placeholders: in-app entries of
    /// products that are not subscriptions carry an empty expiry date (1708), an empty cancellation
    /// date (1712) and a web order line item id of 0 (1711).
    public func payloadDER() -> [UInt8] {
        var attributes: [[UInt8]] = []
        func add(_ type: Int, _ value: [UInt8]?, version: Int = 1) {
            guard let value else { return }
            attributes.append(ReceiptValue.attribute(type: type, version: version, value: value))
        }
        add(0, receiptType.map(ReceiptValue.utf8String))
        add(1, appItemId.map(ReceiptValue.integer))
        add(2, bundleId.map(ReceiptValue.utf8String))
        add(3, applicationVersion.map(ReceiptValue.utf8String))
        add(4, opaqueValue, version: opaqueValueVersion)
        add(5, sha1Hash)
        add(12, receiptCreationDate.map(ReceiptValue.date))
        add(15, downloadId.map(ReceiptValue.integer))
        add(16, versionExternalIdentifier.map(ReceiptValue.integer))
        for purchase in inAppPurchases { add(17, purchase.payloadDER()) }
        add(18, originalPurchaseDate.map(ReceiptValue.date))
        add(19, originalApplicationVersion.map(ReceiptValue.utf8String))
        add(21, expirationDate.map(ReceiptValue.date))
        for other in otherAttributes { add(other.type, Array(other.value), version: other.version) }
        var writer = ASN1Writer()
        writer.setOf(attributes)
        return writer.bytes
    }

    /// The value of attribute 2 as it is hashed: the DER UTF8String of the bundle id, tag and length included.
    public var bundleIdAttributeValue: [UInt8] { ReceiptValue.utf8String(bundleId ?? "") }

    /// Whether the receipt was issued to the device with this identifier: SHA-1 of the identifier
    /// (iOS: the 16 bytes of identifierForVendor; macOS: the 6 bytes of the primary MAC address),
    /// the opaque value and the bundle id attribute equals attribute 5.
    public func matchesDevice(identifier: [UInt8]) -> Bool {
        !sha1Hash.isEmpty
            && Self.deviceHash(
                identifier: identifier,
                opaqueValue: opaqueValue,
                bundleIdAttributeValue: bundleIdAttributeValue
            ) == sha1Hash
    }

    /// Whether the receipt was issued to the iOS device whose identifierForVendor is `vendorIdentifier`.
    public func matchesDevice(vendorIdentifier: UUID) -> Bool {
        matchesDevice(identifier: withUnsafeBytes(of: vendorIdentifier.uuid) { Array($0) })
    }

    /// Attribute 5 for a device: SHA-1(identifier ‖ opaque value ‖ bundle id attribute value).
    public static func deviceHash(identifier: [UInt8], opaqueValue: [UInt8], bundleIdAttributeValue: [UInt8]) -> [UInt8]
    {
        var hasher = Insecure.SHA1()
        hasher.update(data: identifier)
        hasher.update(data: opaqueValue)
        hasher.update(data: bundleIdAttributeValue)
        return Array(hasher.finalize())
    }
}

extension InAppPurchase {
    /// The DER SET OF in-app attributes carried inside attribute 17.
    public func payloadDER() -> [UInt8] {
        var attributes: [[UInt8]] = []
        func add(_ type: Int, _ value: [UInt8]?, version: Int = 1) {
            guard let value else { return }
            attributes.append(ReceiptValue.attribute(type: type, version: version, value: value))
        }
        add(1701, ReceiptValue.integer(Int64(quantity)))
        add(1702, ReceiptValue.utf8String(productId))
        add(1703, ReceiptValue.utf8String(transactionId))
        add(1704, purchaseDate.map(ReceiptValue.date))
        add(1705, originalTransactionId.map(ReceiptValue.utf8String))
        add(1706, originalPurchaseDate.map(ReceiptValue.date))
        add(1707, productTypeCode.map { ReceiptValue.integer(Int64($0)) })
        add(1708, ReceiptValue.date(expiresDate))
        add(1711, ReceiptValue.integer(webOrderLineItemId ?? 0))
        add(1712, ReceiptValue.date(cancellationDate))
        add(1713, isTrialPeriod.map { ReceiptValue.integer($0 ? 1 : 0) })
        add(1719, isInIntroOfferPeriod.map { ReceiptValue.integer($0 ? 1 : 0) })
        add(1721, promotionalOfferId.map(ReceiptValue.utf8String))
        // Kept as they were, version included (it was written as 1, so a decoded receipt did not encode back).
        for other in otherAttributes { add(other.type, Array(other.value), version: other.version) }
        var writer = ASN1Writer()
        writer.setOf(attributes)
        return writer.bytes
    }
}

/// The DER encodings of attribute values.
enum ReceiptValue {
    static func attribute(type: Int, version: Int, value: [UInt8]) -> [UInt8] {
        var writer = ASN1Writer()
        writer.constructed(ASN1Tag.sequence) { writer in
            writer.integer(Int64(type))
            writer.integer(Int64(version))
            writer.primitive(ASN1Tag.octetString, value)
        }
        return writer.bytes
    }

    static func utf8String(_ text: String) -> [UInt8] {
        var writer = ASN1Writer()
        writer.primitive(ASN1Tag.utf8String, Array(text.utf8))
        return writer.bytes
    }

    static func integer(_ value: Int64) -> [UInt8] {
        var writer = ASN1Writer()
        writer.integer(value)
        return writer.bytes
    }

    /// An IA5String RFC 3339 date; empty when absent.
    static func date(_ date: Date?) -> [UInt8] {
        var writer = ASN1Writer()
        writer.primitive(ASN1Tag.ia5String, date.map { Array(ReceiptDate.formatRFC3339($0).utf8) } ?? [])
        return writer.bytes
    }
}
