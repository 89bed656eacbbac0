import Foundation

// `ledger-tables MODULE DIRECTORY OUTPUT SOURCE…`: the check the LedgerTables build-tool plugin runs on every module
// but TillLedger (Plugins/LedgerTables explains why). Each line of a source that names one of the ledger's tables, or
// the column that links a guest to an account, as a whole word outside a `//` comment is an error; the server's
// migrations (TillServer's `ServerSchema`), which create and reshape every table, are the one file let through.
// Writes OUTPUT (a Swift file of one comment, compiled into the module) when there is none, and only when its text
// changes, and exits 1 otherwise (OUTPUT removed).
// Hand-written: no mirrored package checks SQL text in Swift sources.

let names = [
    "srv_transactions", "srv_balance_entries", "srv_balances", "srv_finance", "srv_subscription_states", "alias_of",
]
let migrations = ["TillServer": "Store/ServerSchema.swift"]

/// The first of the ledger's names that `line` holds as a whole word.
func ledgerName(in line: Substring) -> String? {
    func isWordCharacter(_ character: Character) -> Bool {
        character == "_" || character.isLetter || character.isNumber
    }
    for name in names {
        var rest = line[...]
        while let range = rest.range(of: name) {
            let before = range.lowerBound == line.startIndex ? nil : line[line.index(before: range.lowerBound)]
            let after = range.upperBound == line.endIndex ? nil : line[range.upperBound]
            if !(before.map(isWordCharacter) ?? false), !(after.map(isWordCharacter) ?? false) { return name }
            rest = line[range.upperBound...]
        }
    }
    return nil
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: ledger-tables MODULE DIRECTORY OUTPUT SOURCE…\n".utf8))
    exit(64)
}
let module = arguments[arguments.startIndex]
let directory = URL(filePath: arguments[arguments.startIndex + 1], directoryHint: .isDirectory)
let output = URL(filePath: arguments[arguments.startIndex + 2])
let exempt = migrations[module].map { directory.appending(path: $0).standardizedFileURL.path }

var refusals = 0
for path in arguments.dropFirst(3) where URL(filePath: path).standardizedFileURL.path != exempt {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
        guard !line.drop(while: { $0 == " " }).hasPrefix("//"), let name = ledgerName(in: line) else { continue }
        FileHandle.standardError.write(
            Data(
                ("\(path):\(index + 1): error: \(module) names the ledger's \(name): only TillLedger reads or writes "
                    + "money, credits and access; ask a function of its stores (docs/architecture.md)\n").utf8
            )
        )
        refusals += 1
    }
}
guard refusals == 0 else {
    try? FileManager.default.removeItem(at: output)
    exit(1)
}
// Written only when it changes: the build compiles the module's copy again whenever the file is written, and SwiftPM
// runs this check again each time it links the tool, which it does whenever it plans a build again.
let checked = "// \(module) names none of the ledger's tables (checked by Plugins/LedgerTables).\n"
if (try? String(contentsOf: output, encoding: .utf8)) != checked {
    try checked.write(to: output, atomically: true, encoding: .utf8)
}
