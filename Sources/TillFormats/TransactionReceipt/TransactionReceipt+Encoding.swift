import Crypto
import Foundation
import TillCore
import _CryptoExtras

extension TransactionReceipt {
    /// The outer plist in Apple's key order: `signature`, `purchase-info`, `environment`, `pod`,
    /// `signing-status`, then any other keys sorted. Absent values are left out.
    public var outerPlist: OpenStepPlist {
        var entries: [OpenStepPlist.Entry] = []
        func add(_ key: String, _ value: String?) {
            if let value { entries.append(OpenStepPlist.Entry(key: key, value: .string(value))) }
        }
        add(Key.signature, signature.map { Data($0.bytes).base64EncodedString() })
        add(Key.purchaseInfo, Data(purchaseInfoBytes).base64EncodedString())
        add(Key.environment, environmentValue)
        add(Key.pod, pod)
        add(Key.signingStatus, signingStatus)
        for (key, value) in additionalFields.sorted(by: { $0.key < $1.key }) {
            add(key, value)
        }
        return .dictionary(entries)
    }

    /// The outer plist's bytes (what ``base64EncodedString()`` encodes).
    public func encodedBytes() -> [UInt8] {
        outerPlist.serializedBytes()
    }

    /// The receipt as apps hold it: base64 of the outer plist, without line breaks.
    /// For a receipt decoded from Apple's bytes this gives back Apple's string.
    public func base64EncodedString() -> String {
        Data(encodedBytes()).base64EncodedString()
    }

    /// Signs a purchase-info as the App Store did: SHA-1 RSA PKCS #1 v1.5 over `version ‖ purchase-info`.
    ///
    /// - Parameters:
    ///   - purchaseInfo: the inner plist, written in Apple's layout.
    ///   - environment: `.production` writes no `environment` key, any other its raw value (`Sandbox`).
    ///   - pod: the outer `pod`, e.g. `"100"`.
    ///   - privateKey: 1024 bits for version 2, 2048 bits for version 3.
    ///   - certificateDER: the leaf certificate holding the public half of `privateKey`.
    ///   - version: 2 or 3.
    /// - Throws: ``TransactionReceiptError/signingFailed`` when the key size does not fit the version
    ///   or the certificate does not hold the key's public half.
    public static func sign(
        purchaseInfo: PurchaseInfo,
        environment: AppStoreEnvironment,
        pod: String,
        privateKey: _RSA.Signing.PrivateKey,
        certificateDER: [UInt8],
        version: UInt8 = 3
    ) throws(TransactionReceiptError) -> TransactionReceipt {
        guard let length = TransactionReceiptSignature.signatureLength(forVersion: version) else {
            throw .unsupportedSignatureVersion.with("signature version \(version); only 2 and 3 exist")
        }
        guard privateKey.keySizeInBits == length * 8 else {
            throw .signingFailed.with(
                "a version \(version) signature needs a \(length * 8)-bit key, this one has \(privateKey.keySizeInBits) bits"
            )
        }
        let purchaseInfoBytes = purchaseInfo.plist.serializedBytes()
        let message = TransactionReceiptSignature.signedMessage(version: version, purchaseInfo: purchaseInfoBytes)
        let signatureBytes: [UInt8]
        do {
            let signature = try privateKey.signature(
                for: Insecure.SHA1.hash(data: message),
                padding: .insecurePKCS1v1_5
            )
            signatureBytes = Array(signature.rawRepresentation)
        } catch {
            throw .signingFailed.with("RSA signing failed: \(error)")
        }
        let receipt = try TransactionReceipt(
            signature: TransactionReceiptSignature(
                version: version,
                signatureBytes: signatureBytes,
                leafCertificateDER: certificateDER
            ),
            purchaseInfoBytes: purchaseInfoBytes,
            environmentValue: environment == .production ? nil : environment.rawValue,
            pod: pod,
            signingStatus: "0",
            limits: OpenStepPlist.Limits(maxBytes: max(purchaseInfoBytes.count, OpenStepPlist.Limits.default.maxBytes))
        )
        if case .invalid(let failure) = receipt.verifySignature() {
            throw .signingFailed.with("the certificate does not verify the new signature: \(failure)")
        }
        return receipt
    }
}
