import Foundation
import TillCore

/// The one check every customer id entering the server passes, wherever it comes from: a submission's
/// `customerId`, the `{customer}` of a path, a guest id to link.
///
/// The spaces around an id are trimmed (apps have sent `"alice "`); what is left has 1 to 200 characters and no
/// control character, otherwise `400 invalidCustomerId`: no customer can have that id. Characters are Unicode code
/// points, as the contract's `maxLength` counts them (JSON Schema), not the grapheme clusters of `String.count`: one
/// grapheme can hold any number of combining marks, so 200 of them bounded neither the contract's length nor the bytes.
package enum CustomerIdentifier {
    package static let maximumLength = 200

    /// The id as the server stores it, or a 400 naming `field`.
    package static func validated(_ raw: String, field: String = "customerId") throws -> String {
        // Most ids are printable ASCII: no spaces to trim, no control characters, one character a byte. Checking
        // the bytes skips Foundation's trimming and the Unicode tables, a measurable part of a customer read.
        if (1...maximumLength).contains(raw.utf8.count), raw.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            return raw
        }
        return try checkedByUnicode(raw, field: field)
    }

    /// The rule itself, over Unicode: what `validated` gives for every id, printable ASCII or not.
    package static func checkedByUnicode(_ raw: String, field: String = "customerId") throws -> String {
        let id = raw.trimmingCharacters(in: .whitespaces)
        guard (1...maximumLength).contains(id.unicodeScalars.count) else {
            throw CustomerRefusal(
                .invalidCustomerId,
                "\(field) has 1 to \(maximumLength) characters once the spaces around it are trimmed"
            )
        }
        // A percent-encoded path can carry any of them; U+0000 cannot even be stored in PostgreSQL's text.
        guard !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw CustomerRefusal(.invalidCustomerId, "\(field) holds a control character")
        }
        return id
    }
}
