import Foundation

extension TransactionReceipt {
    /// Decodes a receipt as apps send it: base64 of the outer plist. ASCII whitespace (line breaks
    /// from transport) is ignored; the base64 inside the plist must be exact.
    ///
    /// Decoding checks structure only; call ``verifySignature()`` to check the signature.
    public static func decode(base64: String, limits: OpenStepPlist.Limits = .default) throws(TransactionReceiptError)
        -> TransactionReceipt
    {
        let encodedLimit = (limits.maxBytes / 3 + 1) * 4
        guard base64.utf8.count <= encodedLimit * 2 else {
            throw .tooLarge.with("the receipt has \(base64.utf8.count) base64 characters; the limit is \(encodedLimit)")
        }
        let compact = base64.utf8.filter { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        guard compact.count <= encodedLimit else {
            throw .tooLarge.with("the receipt has \(compact.count) base64 characters; the limit is \(encodedLimit)")
        }
        guard let bytes = Self.base64Decoded(compact) else {
            throw .invalidBase64.with("the receipt is not base64")
        }
        return try decode(bytes: bytes, limits: limits)
    }

    /// Decodes the outer plist's bytes (the receipt after base64 decoding).
    public static func decode(bytes: some Collection<UInt8>, limits: OpenStepPlist.Limits = .default)
        throws(TransactionReceiptError) -> TransactionReceipt
    {
        let plist: OpenStepPlist
        do {
            plist = try OpenStepPlist(parsing: bytes, limits: limits)
        } catch {
            throw error == .tooLarge ? .tooLarge.with(error.message) : .malformedPlist.with("receipt: \(error)")
        }
        guard let entries = plist.dictionaryEntries else {
            throw .unexpectedStructure.with("the receipt is not a dictionary")
        }
        var fields: [String: String] = [:]
        for entry in entries {
            guard let value = entry.value.stringValue else {
                throw .unexpectedStructure.with("the receipt value of \"\(entry.key)\" is not a string")
            }
            fields[entry.key] = value
        }
        guard let purchaseInfoBase64 = fields[Key.purchaseInfo] else {
            throw .missingPurchaseInfo.with("the receipt has no \"purchase-info\"")
        }
        guard let purchaseInfoBytes = Self.base64Decoded(Array(purchaseInfoBase64.utf8)) else {
            throw .invalidBase64.with("the purchase-info is not base64")
        }
        var signature: TransactionReceiptSignature?
        if let signatureBase64 = fields[Key.signature] {
            guard let blob = Self.base64Decoded(Array(signatureBase64.utf8)) else {
                throw .invalidBase64.with("the signature is not base64")
            }
            signature = try TransactionReceiptSignature(bytes: blob)
        }
        return try TransactionReceipt(
            signature: signature,
            purchaseInfoBytes: purchaseInfoBytes,
            environmentValue: fields[Key.environment],
            pod: fields[Key.pod],
            signingStatus: fields[Key.signingStatus],
            additionalFields: fields,
            limits: limits
        )
    }

    /// Strict base64 (standard alphabet, padded); nil otherwise.
    static func base64Decoded(_ ascii: [UInt8]) -> [UInt8]? {
        guard ascii.count % 4 == 0, let data = Data(base64Encoded: Data(ascii)) else { return nil }
        return [UInt8](data)
    }
}
