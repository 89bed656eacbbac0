import Testing
import TillLedger

@testable import TillServer

/// The two ids every app request carries: the customer's, checked by one rule, and the request's own.
@Suite struct RequestIdentityTests {
    /// `validated` takes a shortcut for printable ASCII; it must answer as the Unicode rule does, for ids on
    /// either side of each of the shortcut's limits.
    @Test func customerIdsAnswerAsTheUnicodeRuleDoes() {
        let ids = [
            "alice", "a", "!", "~", "reader-42", "a b", " alice", "alice ", "\talice", "a\u{7F}b", "a\u{0}b", "a\nb",
            "é", "alice-é", "ünïcödé ", "\u{85}x", "\u{A0}x", "x\u{2003}", "日本", "", " ", "\t",
            String(repeating: "x", count: 199), String(repeating: "x", count: 200), String(repeating: "x", count: 201),
            String(repeating: "é", count: 200), String(repeating: "é", count: 201),
            " " + String(repeating: "x", count: 200),
        ]
        for id in ids {
            let fast = Result { try CustomerIdentifier.validated(id) }
            let rule = Result { try CustomerIdentifier.checkedByUnicode(id) }
            switch (fast, rule) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(id.debugDescription)")
            case (.failure, .failure): break
            default: Issue.record("\(id.debugDescription): \(fast) against the rule's \(rule)")
            }
        }
    }

    /// An id's length is counted in Unicode code points, as the contract's `maxLength` counts it (JSON Schema): an e
    /// with a combining accent is one character to `String.count` and two here, and one grapheme holding hundreds of
    /// combining marks is hundreds. Schemathesis found the server taking what the contract refuses (2026-12-06).
    @Test func anIdsLengthIsCountedInCodePointsAsTheContractCountsIt() throws {
        let accented = "e\u{301}"
        #expect(try CustomerIdentifier.validated(String(repeating: accented, count: 100)).unicodeScalars.count == 200)
        for id in [String(repeating: accented, count: 101), "x" + String(repeating: "\u{301}", count: 300)] {
            #expect(id.count <= 200, "the case is one that String.count alone would pass")
            #expect(throws: CustomerRefusal.self, "\(id.unicodeScalars.count) code points") {
                try CustomerIdentifier.validated(id)
            }
        }
    }

    /// A new request id is 16 lowercase hex digits, and a process never gives the same one twice.
    @Test func newRequestIdsAreDistinctHex() {
        var seen = Set<String>()
        for _ in 0..<20_000 {
            let id = RequestMiddleware.requestId(nil)
            #expect(
                id.utf8.count == 16 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            )
            seen.insert(id)
        }
        #expect(seen.count == 20_000)
        // Two sources (two processes) start apart.
        #expect(RequestIdSource().next() != RequestIdSource().next())
        #expect(RequestMiddleware.requestId("trace-42.a_b") == "trace-42.a_b")
        #expect(RequestMiddleware.requestId("bad id") != "bad id")
    }
}
