import Foundation
import Logging
import ServiceLifecycle
import TillCatalogue
import TillLedger

/// Folds the ledger's journal into the figures every second (`Figures.refresh`), so that the journal stays short
/// and a page of the console, which folds what is left before it reads, finds little to do.
public struct FiguresWorker: Service {
    let figures: Figures

    public init(server: PurchaseServer) {
        self.figures = server.figures
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await figures.refresh()
            } catch {
                figures.logger.error("figures: \(error)")
            }
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }
}
