import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// A certificate chain that validated, and the period in which it stays valid.
///
/// Path validation without revocation checks depends on time only through the validity periods, so a
/// chain valid at one instant is valid at every instant between `validFrom` and `validUntil`: callers
/// cache it by certificate bytes and re-check only the time.
public struct ValidatedChain: Sendable {
    /// Leaf first, root last.
    public var certificates: [Certificate]
    public var validFrom: Date
    public var validUntil: Date

    public var leaf: Certificate { certificates[0] }

    public func isValid(at date: Date) -> Bool { date >= validFrom && date <= validUntil }
}

/// Validates certificate chains against ``TrustAnchors`` at a given instant (RFC 5280 plus Apple's markers).
public struct ChainValidator: Sendable {
    public var anchors: TrustAnchors
    public var requirements: ChainRequirements

    public init(anchors: TrustAnchors, requirements: ChainRequirements) {
        self.anchors = anchors
        self.requirements = requirements
    }

    /// The outcome of a validation.
    public enum Outcome: Sendable {
        case valid(ValidatedChain)
        /// No path to a trusted root met the policies; the text says why.
        case invalid(String)
    }

    /// The instants a certificate's validity can be checked at: GeneralizedTime has four-digit years, from
    /// 0001-01-01 to 9999-12-31. swift-certificates turns the validation time into one with `try!`, so a date
    /// beyond them (a JWS payload's `signedDate` of the year 287396, read before its signature is checked) would
    /// stop the process: it is refused here instead.
    public static let validationDates =
        Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799)

    /// Builds and checks a path from `leaf` through `intermediates` (and the anchors' intermediates) to a root.
    public func validate(leaf: Certificate, intermediates: [Certificate], at date: Date) async -> Outcome {
        guard Self.validationDates.contains(date) else {
            return .invalid("\(date.timeIntervalSince1970) s since 1970 is outside the years 1 to 9999 of certificates")
        }
        // No chain of issuer names reaches a root: nothing to validate. The server tries Apple's roots first
        // and the simulator's next, so every sandbox receipt from the simulator used to pay for a failing
        // path search against Apple's roots (6% of a submission's CPU time).
        guard reachesRoot(leaf, through: intermediates + anchors.intermediates) else {
            return .invalid("no chain to a trusted root (issuer \(leaf.issuer))")
        }
        let requirements = self.requirements
        var verifier = Verifier(rootCertificates: CertificateStore(anchors.roots)) {
            RFC5280Policy(fixedExpiryValidationTime: date)
            AppleMarkerPolicy(requirements: requirements)
        }
        let result = await verifier.validate(
            leaf: leaf,
            intermediates: CertificateStore(intermediates + anchors.intermediates)
        )
        switch result {
        case .validCertificate(let chain):
            let certificates = Array(chain)
            let from = certificates.map(\.notValidBefore).max() ?? date
            let until = certificates.map(\.notValidAfter).min() ?? date
            return .valid(ValidatedChain(certificates: certificates, validFrom: from, validUntil: until))
        case .couldNotValidate(let failures):
            let reasons = failures.map { String(describing: $0.policyFailureReason) }
            if reasons.isEmpty {
                return .invalid("no chain to a trusted root (issuer \(leaf.issuer))")
            }
            return .invalid(Array(Set(reasons)).sorted().joined(separator: "; "))
        }
    }

    /// Whether issuer names lead from `leaf` to one of the roots, through `intermediates` and the anchors'
    /// (names only: no signature is checked). False means no date can make the chain valid.
    public func reachesRoot(_ leaf: Certificate, intermediates: [Certificate]) -> Bool {
        reachesRoot(leaf, through: intermediates + anchors.intermediates)
    }

    /// Whether issuer names lead from `leaf` to one of the roots through `pool` (names only: the signatures
    /// and policies are the verifier's job).
    private func reachesRoot(_ leaf: Certificate, through pool: [Certificate]) -> Bool {
        let rootSubjects = anchors.roots.map(\.subject)
        var current = leaf
        for _ in 0...pool.count {
            if rootSubjects.contains(current.issuer) { return true }
            // A self-issued certificate that is not a root ends the path.
            guard current.issuer != current.subject,
                let next = pool.first(where: { $0.subject == current.issuer && $0 != current })
            else { return false }
            current = next
        }
        return false
    }
}
