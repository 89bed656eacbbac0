import Foundation
import TillClient
import TillDevelopment

/// `till shop` without a subcommand: a menu, read line by line from standard input, while the app delivers in
/// the background what the store reports later (an Ask to Buy approved, a purchase from another device) and
/// retries what waits.
struct ShopMenu {
    let session: ShopSession
    var lines = LineReader.standardInput()

    static let menu = """
        1 products   2 buy   3 balance   4 entitlements   5 spend   6 restore   7 download   8 outbox   q quit
        """

    func run() async {
        say(
            "Till shop: customer \(session.customerId) on device \(session.deviceId) "
                + "(\(session.bundleId), server \(session.app.server.baseURL))"
        )
        for line in await session.launch() { say("  " + line) }
        let app = session.app
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await app.run(every: 5) }
            group.addTask {
                for await event in app.events {
                    let view = await session.view(of: event.outcome)
                    say("\n(in the background) " + view.text)
                }
            }
            var input = lines.makeAsyncIterator()
            while true {
                say("")
                say(Self.menu)
                guard let choice = await ask("shop> ", &input) else { break }
                if ["q", "quit", "exit"].contains(choice) { break }
                do {
                    try await perform(choice, &input)
                } catch {
                    say("✗ \(error)")
                }
            }
            group.cancelAll()
        }
    }

    private func perform(_ choice: String, _ input: inout AsyncStream<String>.Iterator) async throws {
        switch choice {
        case "1", "products":
            say(try await session.products().text)
        case "2", "buy":
            let products = try await session.products()
            say(products.text)
            guard let answer = await ask("product (number or id)> ", &input), !answer.isEmpty else { return }
            let productId =
                Int(answer).flatMap { products.products.indices.contains($0 - 1) ? $0 : nil }
                .map { products.products[$0 - 1].productId } ?? answer
            let sheet = await ask("payment sheet: [Enter] confirm, c cancel, d declined card, a Ask to Buy> ", &input)
            let action: ShopSession.Choice =
                switch sheet {
                case "c": .cancel
                case "d": .decline
                case "a": .askToBuy
                default: .confirm
                }
            say(try await session.buy(productId, choice: action, progress: ProgressBar()).text)
        case "3", "balance":
            say(await session.balance().text)
        case "4", "entitlements":
            say(try await session.entitlements().text)
        case "5", "spend":
            let credit = await ask("credit [gems]> ", &input).flatMap { $0.isEmpty ? nil : $0 } ?? "gems"
            guard let amount = await ask("amount> ", &input).flatMap({ Int64($0) }) else { return }
            say(try await session.spend(amount, of: credit, requestId: UUID().uuidString).text)
        case "6", "restore":
            say(await session.restore(progress: ProgressBar()).text)
        case "7", "download":
            guard let productId = await ask("product id> ", &input), !productId.isEmpty else { return }
            say(try await session.download(productId, progress: ProgressBar()).text)
        case "8", "outbox":
            say(await session.outbox().text)
        case "":
            break
        default:
            say("? \(choice)")
        }
    }

    /// Prompts and reads one line; nil at the end of the input.
    private func ask(_ prompt: String, _ input: inout AsyncStream<String>.Iterator) async -> String? {
        FileHandle.standardOutput.write(Data(prompt.utf8))
        guard let line = await input.next() else {
            say("")
            return nil
        }
        return line.trimmingCharacters(in: .whitespaces)
    }
}
