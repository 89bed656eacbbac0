import Crypto
import Foundation
import SQLKit
import SwiftASN1
import TillCore
import TillFormats
import TillStorage
import X509
import _CryptoExtras

/// The simulator's two signing authorities, made once and kept in the database so that data signed before
/// a restart still verifies after it: an ECDSA P-256 chain for StoreKit 2 JWS and an RSA-2048 chain for
/// receipts, both with Apple's marker extensions.
///
/// A third, StoreKit Testing in Xcode's, is one self-signed P-256 certificate, as the one Xcode makes for a project
/// (`Editor → Save Public Certificate` exports it): data of the Xcode environment is signed with it, `x5c` holding only
/// that certificate, and a server trusts it by that certificate alone.
public struct SimulatorSigner: Sendable {
    public let jwsAuthority: SigningAuthority
    public let receiptAuthority: SigningAuthority
    public let jws: JWSSigner
    public let receipts: ReceiptSigner
    /// StoreKit Testing in Xcode's certificate, and its signer.
    public let xcodeCertificate: Certificate
    let xcodeJWS: JWSSigner
    let receiptLeafDER: [UInt8]

    /// The signer of an environment's JWS: Xcode's certificate for Xcode data, the App Store's chain otherwise.
    func jws(for environment: AppStoreEnvironment) -> JWSSigner {
        environment.isLocallySigned ? xcodeJWS : jws
    }

    init(
        jwsAuthority: SigningAuthority,
        receiptAuthority: SigningAuthority,
        xcode: (key: P256.Signing.PrivateKey, certificate: Certificate)
    ) throws {
        self.jwsAuthority = jwsAuthority
        self.receiptAuthority = receiptAuthority
        self.xcodeCertificate = xcode.certificate
        self.xcodeJWS = try JWSSigner(key: xcode.key, chain: [xcode.certificate], keyId: "Apple_Xcode_Key", type: "JWT")
        self.jws = try JWSSigner(key: jwsAuthority.leafKey.p256!, chain: jwsAuthority.chain)
        self.receipts = try ReceiptSigner(key: receiptAuthority.leafKey.rsa!, certificates: receiptAuthority.chain)
        var serializer = DER.Serializer()
        try serializer.serialize(receiptAuthority.leaf)
        self.receiptLeafDER = serializer.serializedBytes
    }

    /// Loads the authorities, or makes and stores them on first start.
    static func load(from database: TillDatabase) async throws -> SimulatorSigner {
        let jws = try await authority(named: "jws", kind: .p256, database: database)
        let receipts = try await authority(named: "receipt", kind: .rsa2048, database: database)
        return try SimulatorSigner(
            jwsAuthority: jws,
            receiptAuthority: receipts,
            xcode: try await xcodeCertificate(database: database)
        )
    }

    /// StoreKit Testing's self-signed certificate, made once and kept like the authorities.
    private static func xcodeCertificate(database: TillDatabase) async throws
        -> (key: P256.Signing.PrivateKey, certificate: Certificate)
    {
        let store = SimulatorStore(database: database)
        if try await store.signingKey(named: "xcode") == nil {
            let key = P256.Signing.PrivateKey()
            let certificate = try TestPKI.makeSelfSigned(
                key: Certificate.PrivateKey(key),
                commonName: "StoreKit Testing in Xcode",
                validFrom: Date(timeIntervalSince1970: 1_577_836_800),
                validUntil: Date(timeIntervalSince1970: 1_577_836_800 + 40 * 365 * 86_400)
            )
            try await store.storeSigningKey(
                named: "xcode",
                keyPEM: key.pemRepresentation,
                chainPEM: try certificate.serializeAsPEM().pemString,
                at: Int64(Date().timeIntervalSince1970 * 1000)
            )
        }
        guard let stored = try await store.signingKey(named: "xcode") else {
            throw SimulatorSignerError.keyNotStored("xcode")
        }
        return (
            try P256.Signing.PrivateKey(pemRepresentation: stored.keyPEM),
            try Certificate(pemEncoded: stored.chainPEM)
        )
    }

    private static func authority(
        named name: String,
        kind: TestPKI.KeyKind,
        database: TillDatabase
    ) async throws -> SigningAuthority {
        let store = SimulatorStore(database: database)
        if let stored = try await store.signingKey(named: name) {
            return try decode(keyPEM: stored.keyPEM, chainPEM: stored.chainPEM, kind: kind)
        }
        let made = try TestPKI.makeAuthority(
            kind: kind,
            name: "Till Simulator",
            validFrom: Date(timeIntervalSince1970: 1_577_836_800),
            years: 40
        )
        let keyPEM: String =
            switch made.leafKey {
            case .p256(let key): key.pemRepresentation
            case .rsa(let key): key.pemRepresentation
            }
        let chainPEM = try made.chain.map { try $0.serializeAsPEM().pemString }.joined(separator: "\n")
        try await store.storeSigningKey(
            named: name,
            keyPEM: keyPEM,
            chainPEM: chainPEM,
            at: Int64(Date().timeIntervalSince1970 * 1000)
        )
        // Another process may have stored its own first: use whatever is stored.
        guard let stored = try await store.signingKey(named: name) else {
            throw SimulatorSignerError.keyNotStored(name)
        }
        return try decode(keyPEM: stored.keyPEM, chainPEM: stored.chainPEM, kind: kind)
    }

    private static func decode(keyPEM: String, chainPEM: String, kind: TestPKI.KeyKind) throws -> SigningAuthority {
        let chain = try PEMDocument.parseMultiple(pemString: chainPEM).map { try Certificate(pemDocument: $0) }
        let key: SigningKey =
            switch kind {
            case .p256: .p256(try P256.Signing.PrivateKey(pemRepresentation: keyPEM))
            case .rsa2048: .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: keyPEM))
            }
        return SigningAuthority(root: chain[2], intermediate: chain[1], leaf: chain[0], leafKey: key)
    }

    /// Signs an iOS 6-style transaction receipt (version 3, RSA-2048, SHA-1).
    func transactionReceipt(
        purchaseInfo: TransactionReceipt.PurchaseInfo,
        environment: AppStoreEnvironment
    ) throws -> TransactionReceipt {
        try TransactionReceipt.sign(
            purchaseInfo: purchaseInfo,
            environment: environment,
            pod: "100",
            privateKey: receiptAuthority.leafKey.rsa!,
            certificateDER: receiptLeafDER
        )
    }
}

/// The signing keys could not be kept.
enum SimulatorSignerError: Error, CustomStringConvertible {
    /// The key was stored, yet reading it back found nothing (the table was emptied meanwhile).
    case keyNotStored(String)

    var description: String {
        switch self {
        case .keyNotStored(let name): "the \(name) signing key was stored but is not there to read back"
        }
    }
}
