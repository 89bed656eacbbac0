import Foundation
import PackagePlugin

/// Refuses to build a module other than TillLedger whose code names one of the ledger's tables: the rows that are
/// money, credits and access (docs/architecture.md, "Money, credits and access are written by the ledger alone").
///
/// The ledger's writer (`LedgerStore`) is internal to TillLedger, so the compiler refuses code elsewhere that calls
/// it; but SQL is text, and a statement written in another module (`UPDATE srv_balances …`, `REPLACE INTO …`, a table
/// name in a variable or an `SQLIdentifier`) would compile. So no module but the ledger may name these tables at
/// all: what another room needs of them is a function of the ledger's stores.
///
/// The check is a build command whose inputs are the module's sources (`ledger-tables`, Tools/LedgerTables): the
/// build runs it again whenever one of them changes, and its output, a Swift file of one comment, is compiled into
/// the module, so the module is not compiled until it has passed. (A plugin that only looks at the sources while the
/// build is planned would not do: `swift build` plans again when files come or go, not when one is edited.)
@main
struct LedgerTables: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        guard let module = target as? any SourceModuleTarget, module.name != "TillLedger" else { return [] }
        let sources = module.sourceFiles(withSuffix: "swift").map(\.url)
        let checked = context.pluginWorkDirectoryURL.appending(path: "LedgerTablesChecked.swift")
        return [
            .buildCommand(
                displayName: "Checking that \(module.name) names none of the ledger's tables",
                executable: try context.tool(named: "ledger-tables").url,
                arguments: [module.name, module.directoryURL.path, checked.path] + sources.map(\.path),
                inputFiles: sources,
                outputFiles: [checked]
            )
        ]
    }
}
