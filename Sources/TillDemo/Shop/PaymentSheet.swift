import Synchronization
import TillClient

/// What the simulated customer does on the next payment sheet: confirm unless told otherwise, once.
final class PaymentSheet: Sendable {
    private let next = Mutex(SimulatorStorefront.SheetAction.confirm)

    func set(_ action: SimulatorStorefront.SheetAction) { next.withLock { $0 = action } }

    func answer() -> SimulatorStorefront.SheetAction {
        next.withLock { action in
            defer { action = .confirm }
            return action
        }
    }
}
