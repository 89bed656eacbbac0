import ArgumentParser
import Foundation
import TillClient
import TillDevelopment

/// `till shop`: a terminal storefront on TillClient, against a running `till serve` and the App Store simulator.
/// Scriptable subcommands (each with `--json`), or an interactive menu without one.
public struct ShopCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "shop",
        abstract: "A terminal storefront on TillClient, against a running till serve (see docs/demo.md).",
        discussion: """
            Without a subcommand: an interactive menu. Every command is a launch of the app: it verifies the stored \
            snapshot, sends what waits in the outbox and delivers unfinished purchases (an approved Ask to Buy) \
            first. buy exits with 1 when the store refused the payment, 2 when it was charged but not delivered yet.
            """,
        subcommands: [
            Products.self, Buy.self, Balance.self, Entitlements.self, Spend.self, Restore.self, Download.self,
            Outbox.self,
        ]
    )

    @OptionGroup var options: ShopOptions

    public init() {}

    public func run() async throws {
        let session = try await ShopSession.open(options, environment: ProcessInfo.processInfo.environment)
        await ShopMenu(session: session).run()
    }

    /// One scriptable command: launches the app, runs `body`, shows its answer as text or JSON, and exits with
    /// `exitCode(answer)`. Errors of the server or the store are shown the same way and exit with 1.
    func perform<View: ShopView>(
        json: Bool,
        exitCode: (View) -> Int32 = { _ in 0 },
        _ body: (ShopSession) async throws -> View
    ) async throws {
        let session = try await ShopSession.open(options, environment: ProcessInfo.processInfo.environment)
        for line in await session.launch() { Self.tell(line) }
        let view: View
        do {
            view = try await body(session)
        } catch let error as TillClientError {
            if json { Self.print(["error": ShopError(error)], json: true) } else { Self.tell("✗ \(error)") }
            throw ExitCode(1)
        }
        Self.print(view, json: json)
        let code = exitCode(view)
        if code != 0 { throw ExitCode(code) }
    }

    static func print(_ view: some Encodable, json: Bool) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(view)) ?? Data("{}".utf8)
            say(String(decoding: data, as: UTF8.self))
        } else if let view = view as? any ShopView {
            say(view.text)
        }
    }

    /// A note for the person at the terminal, on standard error (standard output carries the answer).
    static func tell(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

extension ShopCommand {
    struct Products: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The products, with the store's prices.")
        @ParentCommand var shop: ShopCommand
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            try await shop.perform(json: json) { try await $0.products() }
        }
    }

    struct Buy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Buy a product and deliver it (its files downloaded with a progress bar)."
        )
        @ParentCommand var shop: ShopCommand
        @Argument(help: "The product id.") var product: String
        @Option(help: "How many (consumables only, 1 to 10).") var quantity = 1
        @Flag(help: "What the customer does on the payment sheet.") var choice: ShopSession.Choice = .confirm
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            let product = product
            let quantity = quantity
            let choice = choice
            try await shop.perform(
                json: json,
                exitCode: { ["failed", "unverified"].contains($0.outcome) ? 1 : $0.outcome == "notDelivered" ? 2 : 0 }
            ) { session in
                try await session.buy(product, quantity: quantity, choice: choice, progress: ProgressBar())
            }
        }
    }

    struct Balance: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The consumable credits left.")
        @ParentCommand var shop: ShopCommand
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            try await shop.perform(json: json) { await $0.balance() }
        }
    }

    struct Entitlements: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What the customer has, from the server's signed snapshot."
        )
        @ParentCommand var shop: ShopCommand
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            try await shop.perform(json: json) { try await $0.entitlements() }
        }
    }

    struct Spend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Spend consumable credits (on the server).")
        @ParentCommand var shop: ShopCommand
        @Argument(help: "The credit, e.g. gems.") var credit: String
        @Argument(help: "How many.") var amount: Int64
        @Option(help: "The request's id: the same id is spent once, however often it is sent (default: a new one).")
        var requestId: String?
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            let request = requestId ?? UUID().uuidString
            let credit = credit
            let amount = amount
            try await shop.perform(json: json) { try await $0.spend(amount, of: credit, requestId: request) }
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore purchases through the store and deliver them (a new device of the same account)."
        )
        @ParentCommand var shop: ShopCommand
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            try await shop.perform(json: json, exitCode: { $0.outcome == "failed" ? 1 : 0 }) {
                await $0.restore(progress: ProgressBar())
            }
        }
    }

    struct Download: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a product's files to this device, with a progress bar, and open text ones."
        )
        @ParentCommand var shop: ShopCommand
        @Argument(help: "The product id.") var product: String
        @Flag(help: "Delete the files on this device first, and download them again.") var again = false
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            let product = product
            let again = again
            try await shop.perform(json: json) {
                try await $0.download(product, again: again, progress: ProgressBar())
            }
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Submissions waiting for the server, and those it refused for good."
        )
        @ParentCommand var shop: ShopCommand
        @Flag(help: "Answer JSON.") var json = false

        func run() async throws {
            try await shop.perform(json: json) { await $0.outbox() }
        }
    }
}

extension ShopSession.Choice: EnumerableFlag {
    static func help(for value: ShopSession.Choice) -> ArgumentHelp? {
        switch value {
        case .confirm: "Confirm the payment (the default)."
        case .cancel: "Cancel the payment sheet."
        case .decline: "The card is declined."
        case .askToBuy: "Ask to Buy: the payment waits for a parent's approval."
        }
    }
}
