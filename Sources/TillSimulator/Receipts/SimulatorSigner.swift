import Crypto
import Foundation
import SQLKit
import SwiftASN1
import TillCore
import TillFormats
import TillStorage
import X509
import _CryptoExtras

/// The simulator's two signing authorities, made once (``SimulatorKeys``) and kept in the database so that data signed before
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

    /// Loads the authorities, or stores them on first start: those of `keys` when given, new ones otherwise.
    static func load(from database: TillDatabase, keys: SimulatorKeys?) async throws -> SimulatorSigner {
        let store = SimulatorStore(database: database)
        func stored(_ name: String, made: () throws -> SimulatorKeys.Stored) async throws -> SimulatorKeys.Stored {
            if let stored = try await store.signingKey(named: name) {
                return SimulatorKeys.Stored(keyPEM: stored.keyPEM, chainPEM: stored.chainPEM)
            }
            let new = try made()
            try await store.storeSigningKey(
                named: name,
                keyPEM: new.keyPEM,
                chainPEM: new.chainPEM,
                at: Int64(Date().timeIntervalSince1970 * 1000)
            )
            // Another process may have stored its own first: use whatever is stored.
            guard let stored = try await store.signingKey(named: name) else {
                throw SimulatorSignerError.keyNotStored(name)
            }
            return SimulatorKeys.Stored(keyPEM: stored.keyPEM, chainPEM: stored.chainPEM)
        }
        let jws = try await stored("jws") { try keys?.jws ?? SimulatorKeys.authority(.p256) }
        let receipt = try await stored("receipt") { try keys?.receipt ?? SimulatorKeys.authority(.rsa2048) }
        let xcode = try await stored("xcode") { try keys?.xcode ?? SimulatorKeys.xcode() }
        return try SimulatorSigner(
            jwsAuthority: try decode(keyPEM: jws.keyPEM, chainPEM: jws.chainPEM, kind: .p256),
            receiptAuthority: try decode(keyPEM: receipt.keyPEM, chainPEM: receipt.chainPEM, kind: .rsa2048),
            xcode: (
                try P256.Signing.PrivateKey(pemRepresentation: xcode.keyPEM),
                try Certificate(pemEncoded: xcode.chainPEM)
            )
        )
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

/// The simulator's signing keys and their certificates, as its database keeps them (PEM): the JWS authority
/// (ECDSA P-256), the receipt authority (RSA-2048), each a chain of three with Apple's marker extensions, and StoreKit
/// Testing in Xcode's self-signed P-256 certificate.
///
/// A new database makes its own on its first start, unless ``SimulatorConfiguration/keys`` names a set to store
/// instead. Making them costs a debug build about half a second of CPU (the RSA-2048 keys, three of them), so the
/// tests, which open a simulator on a new database hundreds of times, share ``shared``.
public struct SimulatorKeys: Sendable {
    public struct Stored: Sendable {
        public var keyPEM: String
        /// The certificates, leaf first.
        public var chainPEM: String
    }

    public var jws: Stored
    public var receipt: Stored
    public var xcode: Stored

    /// A new set, as a new database makes.
    public static func make() throws -> SimulatorKeys {
        SimulatorKeys(jws: try authority(.p256), receipt: try authority(.rsa2048), xcode: try xcode())
    }

    /// One set made on first use and kept for this process.
    public static var shared: SimulatorKeys {
        get throws { try made.get() }
    }
    private static let made = Result { try make() }

    /// A chain of three (root, intermediate, leaf) of `kind`, valid from 2020 for 40 years.
    static func authority(_ kind: TestPKI.KeyKind) throws -> Stored {
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
        return Stored(
            keyPEM: keyPEM,
            chainPEM: try made.chain.map { try $0.serializeAsPEM().pemString }.joined(separator: "\n")
        )
    }

    /// StoreKit Testing's self-signed certificate.
    static func xcode() throws -> Stored {
        let key = P256.Signing.PrivateKey()
        let certificate = try TestPKI.makeSelfSigned(
            key: Certificate.PrivateKey(key),
            commonName: "StoreKit Testing in Xcode",
            validFrom: Date(timeIntervalSince1970: 1_577_836_800),
            validUntil: Date(timeIntervalSince1970: 1_577_836_800 + 40 * 365 * 86_400)
        )
        return Stored(keyPEM: key.pemRepresentation, chainPEM: try certificate.serializeAsPEM().pemString)
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
