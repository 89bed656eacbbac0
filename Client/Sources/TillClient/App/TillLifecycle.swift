#if canImport(SwiftUI)
    import SwiftUI

    // Compiled for real only on Apple platforms. On Linux, CI type-checks this file against a declaration-only
    // stand-in of exactly the SwiftUI API it uses (Tests/AppleStandIns, docs/client.md).

    extension View {
        /// Sends the outbox, refreshes the snapshot and delivers what waits each time the scene comes back to the
        /// foreground (`scenePhase` becomes `active`). Put it on the root view, beside `.task { await till.start() }`.
        public func tillLifecycle(_ till: some TillCustomerModel) -> some View {
            modifier(TillLifecycleModifier(till: till))
        }
    }

    struct TillLifecycleModifier<Model: TillCustomerModel>: ViewModifier {
        @Environment(\.scenePhase) private var scenePhase
        let till: Model

        func body(content: Content) -> some View {
            // Only Sendable values cross into the task: whether the scene is active, and the model.
            let active = scenePhase == .active
            let till = self.till
            return content.task(id: active) {
                if active { await till.sceneBecameActive() }
            }
        }
    }
#endif
