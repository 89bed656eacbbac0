import Crypto
import Foundation
import SwiftASN1
import TillFormats
import X509
import _CryptoExtras

/// The fuzz targets' own signing authorities: fixed, so that an input signed in one run (a seed, a corpus entry, a
/// regression case) verifies in every later run, and replays give the same verdict. Made once with
/// `TestPKI.makeAuthority` (valid 2010–2070, Apple's marker extensions on leaf and intermediate). Test keys, worth
/// nothing: the targets trust these roots, nothing else does.
public enum FuzzPKI {
    /// ES256 leaf, WWDR-style intermediate, root: signs JWS the way the App Store does.
    public static let jws: SigningAuthority = authority(keyPEM: jwsKeyPEM, chainPEM: jwsChainPEM, rsa: false)
    /// RSA-2048 leaf, intermediate, root: signs app receipts and iOS 6-style transaction receipts.
    public static let receipt: SigningAuthority = authority(
        keyPEM: receiptKeyPEM,
        chainPEM: receiptChainPEM,
        rsa: true
    )

    /// Signs JWS with `jws`'s leaf, its chain in `x5c`.
    public static let jwsSigner: JWSSigner = {
        do { return try JWSSigner(key: jws.leafKey.p256!, chain: jws.chain) } catch { fatalError("FuzzPKI: \(error)") }
    }()

    /// Signs app receipts with `receipt`'s leaf, leaf and intermediate embedded, as the App Store does.
    public static func receiptSigner(layout: ReceiptSigner.Layout = .appStore) -> ReceiptSigner {
        do {
            return try ReceiptSigner(
                key: receipt.leafKey.rsa!,
                certificates: [receipt.leaf, receipt.intermediate],
                layout: layout
            )
        } catch {
            fatalError("FuzzPKI: \(error)")
        }
    }

    /// The leaf's DER, for the signature blob of a transaction receipt.
    public static let receiptLeafDER: [UInt8] = der(receipt.leaf)

    /// Trust in the JWS root only.
    public static let jwsAnchors = TrustAnchors(roots: [jws.root])
    /// Trust in the receipt root, its intermediate known (an iOS 6 receipt carries only its leaf).
    public static let receiptAnchors = TrustAnchors(roots: [receipt.root], intermediates: [receipt.intermediate])

    public static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        do { try serializer.serialize(certificate) } catch { fatalError("FuzzPKI: \(error)") }
        return serializer.serializedBytes
    }

    private static func authority(keyPEM: String, chainPEM: String, rsa: Bool) -> SigningAuthority {
        do {
            let chain = try PEMDocument.parseMultiple(pemString: chainPEM).map { try Certificate(pemDocument: $0) }
            let key: SigningKey =
                rsa
                ? .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: keyPEM))
                : .p256(try P256.Signing.PrivateKey(pemRepresentation: keyPEM))
            return SigningAuthority(root: chain[2], intermediate: chain[1], leaf: chain[0], leafKey: key)
        } catch {
            fatalError("FuzzPKI: the fixed authority cannot be read: \(error)")
        }
    }

    private static let jwsKeyPEM =
        """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJaeHsjk0GVh1gdwI
        cqcUhBspJIramosURGc943Ol5UOhRANCAASWY4/SI5oG9NjYlktILFRdsoB57/+x
        84Pp2OG1T4UqPXcr+6Tex7KcnatNoSfzzYqgxFkW4Ym0eiDQUyFdJpff
        -----END PRIVATE KEY-----
        """

    private static let jwsChainPEM =
        """
        -----BEGIN CERTIFICATE-----
        MIICRjCCAe2gAwIBAgIQYejwEaVrlYdWHHjqqDCW7zAKBggqhkjOPQQDAjCBgjEL
        MAkGA1UEBhMCVVMxEjAQBgNVBAoMCVRpbGwgRnV6ejEqMCgGA1UECwwhVGlsbCBG
        dXp6IENlcnRpZmljYXRpb24gQXV0aG9yaXR5MTMwMQYDVQQDDCpUaWxsIEZ1enog
        V29ybGR3aWRlIERldmVsb3BlciBSZWxhdGlvbnMgQ0EwIBcNMTAwMTAxMDAwMDAw
        WhgPMjA3MDAxMDEwMDAwMDBaMHExCzAJBgNVBAYTAlVTMRIwEAYDVQQKDAlUaWxs
        IEZ1enoxKjAoBgNVBAsMIVRpbGwgRnV6eiBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0
        eTEiMCAGA1UEAwwZVGlsbCBGdXp6IFJlY2VpcHQgU2lnbmluZzBZMBMGByqGSM49
        AgEGCCqGSM49AwEHA0IABJZjj9Ijmgb02NiWS0gsVF2ygHnv/7Hzg+nY4bVPhSo9
        dyv7pN7Hspydq02hJ/PNiqDEWRbhibR6INBTIV0ml9+jUzBRMAwGA1UdEwEB/wQC
        MAAwDgYDVR0PAQH/BAQDAgeAMB8GA1UdIwQYMBaAFNXLCBfImlYRqq2YabcJODL4
        eQSxMBAGCiqGSIb3Y2QGCwEEAgUAMAoGCCqGSM49BAMCA0cAMEQCIA06u6kefYEz
        ZbcqcpHTvtstsOiT6jyBhEarxp9hMD3aAiBb5p3ztbQitnZcYM0dBgdlSAbR59YB
        TOLJmtgM3zng4Q==
        -----END CERTIFICATE-----
        -----BEGIN CERTIFICATE-----
        MIICYzCCAgqgAwIBAgIQQxo/aEjF+YnJgPEu74JxaTAKBggqhkjOPQQDAjBpMQsw
        CQYDVQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxsIEZ1
        enogQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6eiBS
        b290IENBMCAXDTEwMDEwMTAwMDAwMFoYDzIwNzUwMTAxMDYwMDAwWjCBgjELMAkG
        A1UEBhMCVVMxEjAQBgNVBAoMCVRpbGwgRnV6ejEqMCgGA1UECwwhVGlsbCBGdXp6
        IENlcnRpZmljYXRpb24gQXV0aG9yaXR5MTMwMQYDVQQDDCpUaWxsIEZ1enogV29y
        bGR3aWRlIERldmVsb3BlciBSZWxhdGlvbnMgQ0EwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAATUCgERqG5DpwXt6qcaV9fu/bvTozbQToEu0AruQe17GwoJfE1wns9S
        8xsNSyJ8Mx9yeYnw1Tnj9NY6qkwmQ0fno3gwdjASBgNVHRMBAf8ECDAGAQH/AgEA
        MA4GA1UdDwEB/wQEAwIBBjAdBgNVHQ4EFgQU1csIF8iaVhGqrZhptwk4Mvh5BLEw
        HwYDVR0jBBgwFoAUtQZImDyPKJlicpAVGQTMn7Y8ipIwEAYKKoZIhvdjZAYCAQQC
        BQAwCgYIKoZIzj0EAwIDRwAwRAIgVevdpVzGOVBo0MZZthNWMf8Ankrxww5BZfpn
        y2qzOeQCIFuZy+rSBsVE/9xO7J9YcFPGMshQk+zT5LJycwQoYdlN
        -----END CERTIFICATE-----
        -----BEGIN CERTIFICATE-----
        MIICFDCCAbqgAwIBAgIQB3v5x/xyWSyfQkEJGHa2nzAKBggqhkjOPQQDAjBpMQsw
        CQYDVQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxsIEZ1
        enogQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6eiBS
        b290IENBMCAXDTEwMDEwMTAwMDAwMFoYDzIwODAwMTAxMTIwMDAwWjBpMQswCQYD
        VQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxsIEZ1enog
        Q2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6eiBSb290
        IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEHNCTA/LMHIy7cKlQPJiOUnbX
        G5HMl7vnuEHzkC6xrRUMtl60aHOoY/Ia+MnOAWl/HvCaDst9sl3HL6iRAmohiqNC
        MEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwHQYDVR0OBBYEFLUG
        SJg8jyiZYnKQFRkEzJ+2PIqSMAoGCCqGSM49BAMCA0gAMEUCIE4WzNkeuc6uxVoo
        VmTxipwQYJ6+3d+Slnqp+L8fBfLhAiEAyclLMvjHkg6towqxgdLF9V2440gD6M+N
        jrBvjmo/CIg=
        -----END CERTIFICATE-----
        """

    private static let receiptKeyPEM =
        """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEowIBAAKCAQEAnt1nJRswkjNAuDTBALDJ3qa5KQKs+7QAJQqveKGsOjO6wRvB
        yhKtgfs+IxTfiZtAQV3fMlW7v/ZpYhbJstPTONS3XM/ZO/LXkZKZi41ffj1iDooN
        bCfU0N516snEroRtyxZm4WfRgaxpSpCH4tG+xiv55Pmno/BZPtwNd1fLm5RmI1gc
        v6YQEryjcmxcR3RsVHPpZRr/nszs9xnVa7iFzeo/p9vqKbBTVnYx0tYe0bPUMUqT
        XK3oFS64izgUISo8DkldClR6eH4kkqMDOeyeFO53Bvv8zk2rtCdttGDgFvySPfM3
        EE9GqHPLlr5/843ts1AxmwLF8b2XGcLoUOpjpQIDAQABAoIBAAK17+nd7Cb+eWL7
        QXTPz239ZcjpmwaDdIItS7+w8IWgttXPMbAPQAcpAI8sLsFEFSVYYvPSqyy0GWm7
        Tk8/FopQdN2ATWpcsylweS68p425oefyGpcHGfZDaXsrXLAGofH2bKR5d0Vxae2E
        CFGKNyld/DpYOTBOrFMqgY9Q//AkYfTIy+1xG3CkgzohKKpbvRa7G+GfWMsP/vol
        5AY3MQ04KUXt9CyWJMkAeYXvrPLdDC81Y/nF3FF3Hhs15NVM/Br1hB1RSlYuExWV
        atu2bEwQMHKgmGq1xpTurclWbgx3BSxunlwzhbLMX7N0AUCCS2B42D5/tOYdp/5m
        TTztMRECgYEAzG7hew7m1l5NgzVwQEioEu5mUnSaxJGaLegwntKKlvZO2Prr3Nzu
        QeP40SZjar/pRW7jtvsFd5zmr5ie5MMhia72Zrm9Z7x6PoHnBH3TJfkWSoGy41g5
        VT3SXHQail90nRPn6Sh0OcKPXDyNiEPPQkdOiHB1JeKoERCwJRw3AFECgYEAxu/7
        /dZIjX4wUJEkcqQbZisdpWxp7exWgea0+l2bwf4TXJT2cDAgW+4qnTBEBzgUmvLN
        m51GNTeQ/V5siKmQpRt53P++IKYO8PXkW2vaSFKtE1K9U/9HQ9Bp2Y9vSC1MoiGQ
        arwZki0D+FlJITvlYoETETFur5wI2aOXDVOfTRUCgYAIiaTvD7tCPqP8E9JBTQd/
        6ubpEKeaB/6pZiYJq/9PuK+oTiplifCFXfD5QyIpxiQG20+1R5x911anBLe2FBQl
        fOIbfixT1cJBNAmi3WJhFpsAt5Px/LBASBmt9Mda+guTt84apa7c7qwwDPNYOoTA
        Xtv/xLqPv3yHYewJULlXUQKBgDA07UJoj7JB1uFfGo7xN3Z9kjSI3e56q8fUqRxW
        XK0YrYZszn8HGoBMaWUn0gRR0aRum+ZOqTmyGl9bZz+Cn3ty+gfUrTTqKIq5ezmw
        G/gUmL4q+ZgGLzW+pjfDKzs5Ru2u5nkG1cd3QxQGRtNX2VESaBVtfh3t2LMskij3
        j421AoGBALt+VwciSWH1hoM8XkFnxC1zvyVUQv+0VsWgTpHCbA9cQIfXFJNOc3ya
        GuFKPOGx3+v/0pwqFZDPmCgOwVp/zfMD8fpPd6JROtctTUEW1DVSFdPKf4sClHXF
        FuDWyHEgC2yzBakS+OOdxYuAQXzF4LZONBM5i/m4uShruYjZLLlP
        -----END RSA PRIVATE KEY-----
        """

    private static let receiptChainPEM =
        """
        -----BEGIN CERTIFICATE-----
        MIID0zCCArugAwIBAgIQaQDUU84thPFHCm9Df6/mrzANBgkqhkiG9w0BAQsFADCB
        gjELMAkGA1UEBhMCVVMxEjAQBgNVBAoMCVRpbGwgRnV6ejEqMCgGA1UECwwhVGls
        bCBGdXp6IENlcnRpZmljYXRpb24gQXV0aG9yaXR5MTMwMQYDVQQDDCpUaWxsIEZ1
        enogV29ybGR3aWRlIERldmVsb3BlciBSZWxhdGlvbnMgQ0EwIBcNMTAwMTAxMDAw
        MDAwWhgPMjA3MDAxMDEwMDAwMDBaMHExCzAJBgNVBAYTAlVTMRIwEAYDVQQKDAlU
        aWxsIEZ1enoxKjAoBgNVBAsMIVRpbGwgRnV6eiBDZXJ0aWZpY2F0aW9uIEF1dGhv
        cml0eTEiMCAGA1UEAwwZVGlsbCBGdXp6IFJlY2VpcHQgU2lnbmluZzCCASIwDQYJ
        KoZIhvcNAQEBBQADggEPADCCAQoCggEBAJ7dZyUbMJIzQLg0wQCwyd6muSkCrPu0
        ACUKr3ihrDozusEbwcoSrYH7PiMU34mbQEFd3zJVu7/2aWIWybLT0zjUt1zP2Tvy
        15GSmYuNX349Yg6KDWwn1NDederJxK6EbcsWZuFn0YGsaUqQh+LRvsYr+eT5p6Pw
        WT7cDXdXy5uUZiNYHL+mEBK8o3JsXEd0bFRz6WUa/57M7PcZ1Wu4hc3qP6fb6imw
        U1Z2MdLWHtGz1DFKk1yt6BUuuIs4FCEqPA5JXQpUenh+JJKjAznsnhTudwb7/M5N
        q7QnbbRg4Bb8kj3zNxBPRqhzy5a+f/ON7bNQMZsCxfG9lxnC6FDqY6UCAwEAAaNT
        MFEwDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMCB4AwHwYDVR0jBBgwFoAUDSOa
        opQSQA87oclvXDt0az2ivtowEAYKKoZIhvdjZAYLAQQCBQAwDQYJKoZIhvcNAQEL
        BQADggEBABeq2H1NhcN8Xhj+VNnuXR9YHDbRtYiYWu84IJ4XjOOlPXBRyE76aJtz
        6/FuuC6LWvaSVSo5+zo/dYCX/rWJx9A1EHNrqCY3ARkRBOtib80lWAthsnaEexFj
        UwZppo9E3AZJU44NO6vMADkK5wsFVWJuRHr3hOeyPFOmOZBlxty3WYq05aJVRjhY
        gU/cJB6qI/0X5QegmykdN3Jms4at8gVZBQ1LCZrBWgmiR7TEDVfFKBy9EwOJjT0R
        9ebqF1fgic+8X2/BtAneTx6pE+Br11P4QI0LOYV6mTZ0MQgLnmTEZUIczGnBVzdf
        1pvYhLqQXDyzV9q+Lcsj+GW5eQFlCRg=
        -----END CERTIFICATE-----
        -----BEGIN CERTIFICATE-----
        MIID8DCCAtigAwIBAgIQeYX/zjT83lOSGvoWW7o/7jANBgkqhkiG9w0BAQsFADBp
        MQswCQYDVQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxs
        IEZ1enogQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6
        eiBSb290IENBMCAXDTEwMDEwMTAwMDAwMFoYDzIwNzUwMTAxMDYwMDAwWjCBgjEL
        MAkGA1UEBhMCVVMxEjAQBgNVBAoMCVRpbGwgRnV6ejEqMCgGA1UECwwhVGlsbCBG
        dXp6IENlcnRpZmljYXRpb24gQXV0aG9yaXR5MTMwMQYDVQQDDCpUaWxsIEZ1enog
        V29ybGR3aWRlIERldmVsb3BlciBSZWxhdGlvbnMgQ0EwggEiMA0GCSqGSIb3DQEB
        AQUAA4IBDwAwggEKAoIBAQCyCyOMJRXDlNpmagQdj6hjsIxzkEW9xwTiqfXcbmCS
        T3NNhBP6YxGlftJY3zlgrzXeT+VEfXyRiLUiJEU4mxCQNy/kBRwznrMoHxx7hoiP
        EmCh4l7JaUTBimGcQx1+ETxDokEGtMszcOjkSIAZ/PVh9Mi++FHz4rxNxTc78735
        woxay7XicSq217ZaULh+qrDbJmzTeY41wYiyIz6odWkyCDdLhS7leuaUghe6zJTg
        487OxaQTr8juk9UkzK/EaKBPh6Fjgfn7uhZinn8ocvtxO8FJRO/ZknBAB5dUY5Xd
        sijW/t4+eOFZp+mVia7cDlJCvPe5nAK338/TdhXqHWVzAgMBAAGjeDB2MBIGA1Ud
        EwEB/wQIMAYBAf8CAQAwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBQNI5qilBJA
        DzuhyW9cO3RrPaK+2jAfBgNVHSMEGDAWgBRu0prn4n3DDGX3Yh6ah3MCp0Dw8jAQ
        BgoqhkiG92NkBgIBBAIFADANBgkqhkiG9w0BAQsFAAOCAQEAemTem1sh7ZDKgWKy
        BSOPAnpTUcixA7HDfJaVoqkd6OmK+I6b/+UYGJIn8F5Lf3qC1RK1q0wGeQ96MVJq
        eDtjM23Jq/C51EH6SIVdgvfa2SEWfjIPKoQmGBPiApw1+mJcd5Egz9fac0EV/0nL
        svUmwn726eecDxnNWYw1xtfiz2TkX57qbciXcy/qeXOTgvGPDUMvm/RrR2UInJaV
        Gj0fEB7RjmPwI4mjcjqx+KfZKjLO8l8kexmHooMSJ8v7MUh5AVodrVMJrn3Q+CRe
        dE1x0Zhi7YcU8VGjKaJ2vliSE4GVY/ALVt1wv6B7fSdrWvBZj0te5ncSd4ID8i3o
        AL1GOw==
        -----END CERTIFICATE-----
        -----BEGIN CERTIFICATE-----
        MIIDoDCCAoigAwIBAgIQM0XyX5LI1BZQMYwCWiSjTjANBgkqhkiG9w0BAQsFADBp
        MQswCQYDVQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxs
        IEZ1enogQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6
        eiBSb290IENBMCAXDTEwMDEwMTAwMDAwMFoYDzIwODAwMTAxMTIwMDAwWjBpMQsw
        CQYDVQQGEwJVUzESMBAGA1UECgwJVGlsbCBGdXp6MSowKAYDVQQLDCFUaWxsIEZ1
        enogQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxGjAYBgNVBAMMEVRpbGwgRnV6eiBS
        b290IENBMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAreli9MqihH7q
        3zMtsOBJw0qOZhGWuKqZAcdaj7bdgpNVfmyHqcBq1ahXDvIKEPqMKxWsppoP1PhN
        2Fi/TLBkUrGRMqcbc5qVwR7yalEIeqb7rYOI1wA8J4udmCBP1Ffi+HBugsTpcEYp
        yHEjmAFG0Uo14PkRIkqPB2EKcvp9uYKcmQEmIzGUR6zGfIUq89sUZK1Z5G9Y/cJf
        5FUeRqUKHIgxwlf/GYxpVxkIOc7KUWxyReJFHhS0ykbXKMD63HeAVPQojbIkplFz
        eSpBRN6itvYcEHPTSAOqIw+fB9hLE1ZYp/FO98fQU9bi/E6W7pmw3Dt0APhfZsDC
        rI5jlGIcnQIDAQABo0IwQDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIB
        BjAdBgNVHQ4EFgQUbtKa5+J9wwxl92IemodzAqdA8PIwDQYJKoZIhvcNAQELBQAD
        ggEBACZsweLyvScwCTmFBYX7aGBnZ1NBw/M3FJN9j36DxrIHuLYvNZjsoCO87Y76
        8aj/SeNMNCAKwiI9eNl8fXnX90iZMJ/Jx1jeRVbDNpHwfZ9qJrfYocrVCSqR39wD
        LsVJLcoVr2MRSHRU2gAa+VaYc2WJTfYDegi2b3+cUFBbgO0lwGx8nczIDN/+vprR
        bo5XM5uSLG2zeRL5UykzRu7ADBVyzgtYTTralUz9oymm6z/NEBeZlN3KCA8vUvVw
        1Z0zC28oeZfpA9ZtSFoMyj92YLMlYS2NepaI4p5OoMOaJDlNJdF29SS5oNU06x4a
        QjxEHUF1Azm47rbWJAwt5LjRYSA=
        -----END CERTIFICATE-----
        """
}
