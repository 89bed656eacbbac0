import Foundation
import SwiftASN1
import X509

extension TransactionReceiptSignature {
    /// The few fields of the leaf certificate that can be read without swift-certificates' full
    /// parse, which refuses the RSA-1024 keys of version 2 leaves:
    ///
    /// ```
    /// Certificate  ::= SEQUENCE { tbsCertificate TBSCertificate, signatureAlgorithm, signatureValue }
    /// TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer Name,
    ///                               validity SEQUENCE { notBefore Time, notAfter Time }, subject Name,
    ///                               subjectPublicKeyInfo SEQUENCE, ... }
    /// ```
    ///
    /// Nothing here is trusted: it is what the certificate says about itself.
    public struct LeafCertificateSummary: Sendable, Hashable {
        public var subject: DistinguishedName
        public var issuer: DistinguishedName
        public var notValidBefore: Date
        public var notValidAfter: Date
        /// The DER SubjectPublicKeyInfo.
        public var subjectPublicKeyInfoDER: [UInt8]

        /// The subject's first common name (`CN`).
        public var subjectCommonName: String? { Self.commonName(of: subject) }
        /// The issuer's first common name (`CN`).
        public var issuerCommonName: String? { Self.commonName(of: issuer) }

        static func commonName(of name: DistinguishedName) -> String? {
            for rdn in name {
                for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                    if let text = String(attribute.value) { return text }
                }
            }
            return nil
        }
    }

    /// Reads the subject, issuer, validity and public key of the leaf certificate.
    public func leafCertificateSummary() throws(TransactionReceiptError) -> LeafCertificateSummary {
        do {
            return try Self.summarize(DER.parse(leafCertificateDER))
        } catch let error as TransactionReceiptError {
            throw error
        } catch {
            throw .malformedSignature.with("the leaf certificate is not an X.509 certificate: \(error)")
        }
    }

    private static func summarize(_ certificate: ASN1Node) throws -> LeafCertificateSummary {
        let fields = try children(of: certificate)
        guard fields.count == 3 else { throw notACertificate("a certificate has 3 fields, this one \(fields.count)") }
        var tbs = try children(of: fields[0])[...]
        if tbs.first?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            tbs = tbs.dropFirst()
        }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        guard tbs.count >= 6 else { throw notACertificate("the TBSCertificate is too short") }
        let issuerNode = tbs[tbs.startIndex + 2]
        let validity = try children(of: tbs[tbs.startIndex + 3])
        let subjectNode = tbs[tbs.startIndex + 4]
        let keyNode = tbs[tbs.startIndex + 5]
        guard validity.count == 2, keyNode.identifier == .sequence else {
            throw notACertificate("the validity or the public key is malformed")
        }
        return LeafCertificateSummary(
            subject: try DistinguishedName(derEncoded: subjectNode),
            issuer: try DistinguishedName(derEncoded: issuerNode),
            notValidBefore: try date(validity[0]),
            notValidAfter: try date(validity[1]),
            subjectPublicKeyInfoDER: Array(keyNode.encodedBytes)
        )
    }

    private static func children(of node: ASN1Node) throws -> [ASN1Node] {
        guard node.identifier == .sequence, case .constructed(let nodes) = node.content else {
            throw notACertificate("expected a SEQUENCE, found \(node.identifier)")
        }
        return Array(nodes)
    }

    private static func date(_ node: ASN1Node) throws -> Date {
        let year: Int, month: Int, day: Int, hours: Int, minutes: Int, seconds: Int
        switch node.identifier {
        case .utcTime:
            let time = try UTCTime(derEncoded: node)
            (year, month, day, hours, minutes, seconds) = (
                time.year, time.month, time.day, time.hours, time.minutes, time.seconds
            )
        case .generalizedTime:
            let time = try GeneralizedTime(derEncoded: node)
            (year, month, day, hours, minutes, seconds) = (
                time.year, time.month, time.day, time.hours, time.minutes, time.seconds
            )
        default:
            throw notACertificate("a validity date is neither UTCTime nor GeneralizedTime")
        }
        let days = ReceiptDate.daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hours * 3600 + minutes * 60 + seconds))
    }

    private static func notACertificate(_ reason: String) -> TransactionReceiptError {
        .malformedSignature.with("the leaf certificate is not an X.509 certificate: \(reason)")
    }
}
