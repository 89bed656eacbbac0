import Testing
import TillFormats

struct OpenStepPlistTests {
    @Test func parsesAppleLayoutAndWritesItBackByteForByte() throws {
        let document = "{\n\t\"signature\" = \"AnTJ+/=\";\n\t\"environment\" = \"Sandbox\";\n\t\"pod\" = \"100\";\n}"
        let plist = try OpenStepPlist(parsing: document)
        #expect(
            plist
                == .dictionary([
                    OpenStepPlist.Entry(key: "signature", value: .string("AnTJ+/=")),
                    OpenStepPlist.Entry(key: "environment", value: .string("Sandbox")),
                    OpenStepPlist.Entry(key: "pod", value: .string("100")),
                ])
        )
        #expect(plist["pod"]?.stringValue == "100")
        #expect(plist["missing"] == nil)
        #expect(plist.serialized() == document)
    }

    @Test func readsNestedContainersBareWordsAndLooseWhitespace() throws {
        let plist = try OpenStepPlist(
            parsing:
                "  {a=b;list=( x , \"y z\" , ) ;\r\n nested = { \"k\" = ( ); deeper = {}; }; path = /usr/lib:2.0-beta_$+; }\n"
        )
        #expect(plist["a"] == .string("b"))
        #expect(plist["list"] == .array([.string("x"), .string("y z")]))
        #expect(plist["nested"]?["k"] == .array([]))
        #expect(plist["nested"]?["deeper"] == .dictionary([]))
        #expect(plist["path"] == .string("/usr/lib:2.0-beta_$+"))
        #expect(plist.dictionaryEntries?.map(\.key) == ["a", "list", "nested", "path"])
        #expect(try OpenStepPlist(parsing: "( )") == .array([]))
        #expect(try OpenStepPlist(parsing: "bare") == .string("bare"))
    }

    @Test func decodesEveryEscape() throws {
        let plist = try OpenStepPlist(
            parsing: #""q\"b\\n\nt\tr\ra\ab\bf\fv\v é\U00e9\U00E9 \UD83D\UDE00 \101\0\12""#
        )
        #expect(plist == .string("q\"b\\n\nt\tr\ra\u{07}b\u{08}f\u{0C}v\u{0B} ééé 😀 A\u{0}\n"))
    }

    @Test func writesEscapesSoTheOutputIsASCIIAndParsesBack() throws {
        let text = "quote\" backslash\\ newline\n tab\t cr\r bell\u{07} del\u{7F} é 😀 nul\u{0}"
        let plist = OpenStepPlist.dictionary(["key \"1\"": .string(text)])
        let written = plist.serialized()
        #expect(
            written
                == "{\n\t\"key \\\"1\\\"\" = \"quote\\\" backslash\\\\ newline\\n tab\\t cr\\r bell\\007 del\\177 \\U00e9 \\Ud83d\\Ude00 nul\\000\";\n}"
        )
        #expect(written.utf8.allSatisfy { $0 < 0x80 })
        #expect(try OpenStepPlist(parsing: written) == plist)
    }

    @Test func writesNestedContainersWithTabIndentation() throws {
        let plist = OpenStepPlist.dictionary([
            "a": .dictionary(["b": .string("c")]),
            "list": .array([.string("x"), .dictionary(["k": .string("v")])]),
            "empty": .array([]),
        ])
        let expected = """
            {
            \t"a" = {
            \t\t"b" = "c";
            \t};
            \t"list" = (
            \t\t"x",
            \t\t{
            \t\t\t"k" = "v";
            \t\t}
            \t);
            \t"empty" = (
            \t);
            }
            """
        #expect(plist.serialized() == expected)
        #expect(try OpenStepPlist(parsing: expected) == plist)
    }

    @Test(arguments: [
        ("", "unexpectedEnd"),
        ("   \n", "unexpectedEnd"),
        ("{\"a\" = \"b\";", "unexpectedEnd"),
        ("{\"a\" = \"b\"}", "unexpectedCharacter"),
        ("{\"a\" \"b\";}", "unexpectedCharacter"),
        ("{\"a\" = ;}", "unexpectedCharacter"),
        ("{= \"b\";}", "unexpectedCharacter"),
        ("{\"a\" = \"b\"; \"a\" = \"c\";}", "duplicateKey"),
        ("{a = b; a = b;}", "duplicateKey"),
        ("{} {}", "trailingData"),
        ("\"a\" // comment", "trailingData"),
        ("{\"a\" = \"unterminated;}", "unterminatedString"),
        ("\"ends in an escape\\", "unterminatedString"),
        ("\"\\x41\"", "invalidEscape"),
        ("\"\\U12\"", "invalidEscape"),
        ("\"\\U12G4\"", "invalidEscape"),
        ("\"\\UD83D\"", "invalidEscape"),
        ("\"\\UD83D\\U0041\"", "invalidEscape"),
        ("\"\\UDE00\"", "invalidEscape"),
        ("\"\\200\"", "invalidEscape"),
        ("(a, , b)", "unexpectedCharacter"),
        ("(a b)", "unexpectedCharacter"),
        ("(a,", "unexpectedEnd"),
        ("<0fbd77>", "unexpectedCharacter"),
        ("{a = <0f>;}", "unexpectedCharacter"),
        ("{a = b;};", "trailingData"),
    ])
    func rejectsMalformedDocumentsWithAReason(document: String, code: String) {
        do {
            let value = try OpenStepPlist(parsing: document)
            Issue.record("parsed \(document.debugDescription) as \(value)")
        } catch {
            #expect(error.code == code, "\(document.debugDescription): \(error)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func rejectsBytesThatAreNotUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22]] {
            #expect(throws: OpenStepPlistError.invalidUTF8) { try OpenStepPlist(parsing: bytes) }
        }
        #expect(throws: OpenStepPlistError.unexpectedCharacter) {
            try OpenStepPlist(parsing: [0xEF, 0xBB, 0xBF, 0x7B, 0x7D])
        }
        #expect(throws: OpenStepPlistError.unexpectedCharacter) { try OpenStepPlist(parsing: [0x7B, 0x00, 0x7D]) }
    }

    @Test func reportsWhereTheProblemIs() {
        do {
            _ = try OpenStepPlist(parsing: "{\n\t\"a\" = \"b\";\n\t\"c\" = \"d\"\n}")
            Issue.record("a missing ';' was accepted")
        } catch {
            #expect(error == .unexpectedCharacter)
            #expect(error.offset == 25)
            #expect(error.message.contains("';' after the value of \"c\""))
        }
    }

    @Test func enforcesTheNestingLimit() throws {
        func nested(_ depth: Int) -> String {
            String(repeating: "{a=", count: depth - 1) + "{}" + String(repeating: ";}", count: depth - 1)
        }
        #expect(try OpenStepPlist(parsing: nested(16)).dictionaryEntries?.count == 1)
        #expect(throws: OpenStepPlistError.tooDeep) { try OpenStepPlist(parsing: nested(17)) }
        #expect(throws: OpenStepPlistError.tooDeep) { try OpenStepPlist(parsing: String(repeating: "(", count: 17)) }
        #expect(throws: OpenStepPlistError.tooDeep) { try OpenStepPlist(parsing: "{a=(", limits: .init(maxDepth: 1)) }
        // Far deeper than any stack allows is refused quickly, even with an absurd limit.
        let deep = String(repeating: "(", count: 60_000)
        #expect(throws: OpenStepPlistError.tooDeep) {
            try OpenStepPlist(parsing: deep, limits: .init(maxDepth: 1_000_000))
        }
    }

    @Test func enforcesTheSizeLimit() throws {
        let atLimit = "\"" + String(repeating: "a", count: 64 * 1024 - 2) + "\""
        #expect(try OpenStepPlist(parsing: atLimit).stringValue?.count == 64 * 1024 - 2)
        #expect(throws: OpenStepPlistError.tooLarge) { try OpenStepPlist(parsing: atLimit + " ") }
        #expect(throws: OpenStepPlistError.tooLarge) {
            try OpenStepPlist(parsing: "{a=b;}", limits: .init(maxBytes: 5))
        }
    }

    @Test func randomTreesSurviveAWriteAndReadBack() throws {
        var generator = SeededGenerator(seed: 0x5EED_0001)
        let alphabet = Array("abcXYZ019 \"\\\n\t\r\u{01}\u{7F}é😀-_;={}(),/").map(String.init)
        func randomString() -> String {
            (0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
                .joined()
        }
        func randomValue(depth: Int) -> OpenStepPlist {
            switch depth >= 4 ? 0 : Int.random(in: 0...2, using: &generator) {
            case 0: return .string(randomString())
            case 1:
                return .array((0..<Int.random(in: 0...3, using: &generator)).map { _ in randomValue(depth: depth + 1) })
            default:
                var keys = Set<String>()
                var entries: [OpenStepPlist.Entry] = []
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    let key = randomString()
                    if keys.insert(key).inserted {
                        entries.append(.init(key: key, value: randomValue(depth: depth + 1)))
                    }
                }
                return .dictionary(entries)
            }
        }
        for _ in 0..<500 {
            let value = randomValue(depth: 0)
            let written = value.serialized()
            #expect(try OpenStepPlist(parsing: written) == value, "\(written.debugDescription)")
        }
    }

    @Test func randomAndMutatedBytesAreRejectedOrReadConsistently() {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        let valid = Array(
            "{\n\t\"a\" = \"b\\n\\U00e9\";\n\t\"list\" = (\n\t\tx,\n\t\t\"y\"\n\t);\n\t\"n\" = {\n\t\tk = v;\n\t};\n}"
                .utf8
        )
        var accepted = 0
        var rejected = 0
        for round in 0..<3_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let position = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0...2, using: &generator) {
                    case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(Array("{}()\";=,\\U".utf8).randomElement(using: &generator)!, at: position)
                    }
                }
            }
            do {
                let value = try OpenStepPlist(parsing: bytes)
                accepted += 1
                // Whatever is accepted must mean the same thing after a write and read back.
                #expect(try OpenStepPlist(parsing: value.serialized()) == value)
            } catch {
                rejected += 1
                #expect(!error.code.isEmpty)
            }
        }
        #expect(accepted > 0 && rejected > 0, "accepted \(accepted), rejected \(rejected)")
    }
}
