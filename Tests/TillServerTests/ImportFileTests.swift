import Testing
import TillContract

@testable import TillAppStore

/// The import file's two forms, read as `ImportFile` reads them.
struct ImportFileTests {
    @Test func csvWithQuotesCRLFAndAByteOrderMark() throws {
        let rows = try ImportFile.rows(
            Array(
                "\u{FEFF}customerId,note,transactionId\r\n\"smith, anna\",\"said \"\"hi\"\"\",100\r\n\r\nbob,,200\r\n"
                    .utf8
            )
        )
        #expect(rows.map(\.customerId) == ["smith, anna", "bob"])
        #expect(
            rows.map(\.input) == ["100", "200"] && rows.allSatisfy { $0.kind == .transactionId && $0.refusal == nil }
        )
        #expect(rows.map(\.number) == [1, 2])
    }

    @Test func jsonLinesWithARowThatIsNotAnObject() throws {
        let rows = try ImportFile.rows(
            Array(
                """
                {"customerId":"alice","originalTransactionId":100}
                [1,2]
                {"customerId":"bob","appReceipt":"MIIT","signedTransaction":"eyJ"}

                {"customerId":"carol","signedTransaction":"eyJ"}
                """.utf8
            )
        )
        #expect(rows.map(\.number) == [1, 2, 3, 4])
        #expect(rows[0].kind == .transactionId && rows[0].input == "100" && rows[0].refusal == nil)
        #expect(rows[1].refusal?.reason == .invalidRow && rows[2].refusal?.reason == .invalidRow)
        #expect(rows[3].kind == .signedTransaction && rows[3].customerId == "carol")
    }

    @Test func aFileWithoutWhatARowNeedsIsRefusedWhole() throws {
        for file in ["", "  \n", "customerId\nalice\n", "transactionId\n100\n", "customerId,transactionId\n", "\u{FF}"]
        {
            #expect(throws: ImportRefusal.self, "\(file.debugDescription)") { try ImportFile.rows(Array(file.utf8)) }
        }
        #expect(throws: ImportRefusal.self) { try ImportFile.rows([0xFF, 0xFE]) }
    }

    @Test func aRowWithABadCustomerIdOrTwoInputsIsRefusedAlone() throws {
        let rows = try ImportFile.rows(
            Array("customerId,transactionId,appReceipt\n,1,\nbob,2,MIIT\ncarol,,\ndave,4,\n".utf8)
        )
        #expect(rows.map { $0.refusal?.reason } == [.invalidCustomerId, .invalidRow, .invalidRow, nil])
    }
}
