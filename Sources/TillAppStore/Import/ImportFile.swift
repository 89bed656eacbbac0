import CSV
import Foundation
import TillContract
import TillCore
import TillLedger

/// One row of an import file as it was read: its customer and what finds their purchases at Apple, or why the row
/// cannot be imported (it is kept, refused, so that the summary counts every row of the file).
package struct ImportFileRow: Sendable, Equatable {
    package var number: Int
    package var customerId: String?
    package var kind: ImportRowKind?
    package var input: String
    /// Why the row is refused as it stands (`invalidRow`, `invalidCustomerId`), with a message.
    package var refusal: (reason: ImportRowReason, detail: String)?

    package static func == (lhs: ImportFileRow, rhs: ImportFileRow) -> Bool {
        lhs.number == rhs.number && lhs.customerId == rhs.customerId && lhs.kind == rhs.kind && lhs.input == rhs.input
            && lhs.refusal?.reason == rhs.refusal?.reason && lhs.refusal?.detail == rhs.refusal?.detail
    }
}

/// Reads an import file (docs/operations.md, "Importing existing customers"): CSV with a header row, or JSON lines,
/// each row a `customerId` and exactly one of `transactionId` (or `originalTransactionId`), `appReceipt` or
/// `signedTransaction`. A file that cannot be read as either is refused whole (`invalidImportFile`); a row that lacks
/// what it needs is kept as a refused row.
package enum ImportFile {
    /// The most rows one file may hold.
    package static let maximumRows = 1_000_000

    /// The column names a file may use, and the kind of row each makes.
    static let columns: [String: ImportRowKind] = [
        "transactionId": .transactionId, "originalTransactionId": .transactionId, "appReceipt": .appReceipt,
        "signedTransaction": .signedTransaction,
    ]

    /// Reads `bytes`: JSON lines when its first character (after a byte order mark and blanks) is `{`, CSV otherwise.
    package static func rows(_ bytes: [UInt8]) throws -> [ImportFileRow] {
        guard var text = String(validating: bytes, as: UTF8.self) else {
            throw ImportRefusal(.invalidImportFile, "the file is not UTF-8 text")
        }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        let start = text.first { !$0.isWhitespace }
        guard start != nil else { throw ImportRefusal(.invalidImportFile, "the file has no rows") }
        let rows = start == "{" ? try jsonLines(text) : try csv(text)
        guard !rows.isEmpty else { throw ImportRefusal(.invalidImportFile, "the file has no rows") }
        guard rows.count <= maximumRows else {
            throw ImportRefusal(
                .invalidImportFile,
                "the file has \(rows.count) rows; one import takes at most \(maximumRows): split it"
            )
        }
        return rows
    }

    /// CSV (RFC 4180, through CSV.swift): a header row naming `customerId` and one of the input columns; other
    /// columns are ignored. Row numbers count the data rows from 1.
    static func csv(_ text: String) throws -> [ImportFileRow] {
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true, trimFields: true)
        } catch {
            throw ImportRefusal(.invalidImportFile, "the CSV header cannot be read: \(error)")
        }
        let header = reader.headerRow ?? []
        guard let customerColumn = header.firstIndex(of: "customerId") else {
            throw ImportRefusal(
                .invalidImportFile,
                "the CSV header names no customerId column (it has \(header.joined(separator: ", ")))"
            )
        }
        let inputs = header.enumerated().compactMap { index, name in columns[name].map { (index, $0) } }
        guard !inputs.isEmpty else {
            throw ImportRefusal(
                .invalidImportFile,
                "the CSV header names none of transactionId, originalTransactionId, appReceipt, signedTransaction"
            )
        }
        var rows: [ImportFileRow] = []
        while let fields = reader.next() {
            if fields.allSatisfy(\.isEmpty) { continue }  // a blank line
            let value = { (index: Int) in index < fields.count ? fields[index] : "" }
            rows.append(
                row(
                    number: rows.count + 1,
                    customerId: value(customerColumn),
                    inputs: inputs.map { ($0.1, value($0.0)) }
                )
            )
            guard rows.count <= maximumRows else { break }
        }
        if let error = reader.error {
            throw ImportRefusal(.invalidImportFile, "the CSV cannot be read after row \(rows.count): \(error)")
        }
        return rows
    }

    /// JSON lines: one object a line, with the keys of the CSV's header; blank lines are skipped. A line that is not
    /// a JSON object is a refused row.
    static func jsonLines(_ text: String) throws -> [ImportFileRow] {
        var rows: [ImportFileRow] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let number = rows.count + 1
            guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
                rows.append(
                    ImportFileRow(
                        number: number,
                        input: "",
                        refusal: (.invalidRow, "line \(number) is not a JSON object")
                    )
                )
                continue
            }
            let text = { (key: String) -> String in
                switch object[key] {
                case let string as String: string
                case let number as NSNumber: number.stringValue
                default: ""
                }
            }
            rows.append(
                row(
                    number: number,
                    customerId: text("customerId"),
                    inputs: columns.keys.sorted().map { (columns[$0]!, text($0)) }
                )
            )
            guard rows.count <= maximumRows else { break }
        }
        return rows
    }

    /// One row from its customer id and its input columns' values: refused unless the id is valid and exactly one
    /// input is given.
    static func row(number: Int, customerId: String, inputs: [(ImportRowKind, String)]) -> ImportFileRow {
        let given = inputs.filter { !$0.1.isEmpty }
        let customer: String
        do {
            customer = try CustomerIdentifier.validated(customerId)
        } catch {
            return ImportFileRow(
                number: number,
                input: given.first?.1 ?? "",
                refusal: (.invalidCustomerId, "customerId has 1 to 200 characters and no control character")
            )
        }
        guard let (kind, input) = given.first, given.count == 1 else {
            return ImportFileRow(
                number: number,
                customerId: customer,
                input: "",
                refusal: (
                    .invalidRow,
                    given.isEmpty
                        ? "the row has no transactionId, appReceipt or signedTransaction"
                        : "the row has more than one of transactionId, appReceipt and signedTransaction"
                )
            )
        }
        return ImportFileRow(number: number, customerId: customer, kind: kind, input: input)
    }
}
