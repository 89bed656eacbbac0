import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A notification endpoint for tests: records every signed payload, and fails the first `failures` deliveries.
final class NotificationReceiver: Sendable {
    private let state: Mutex<(payloads: [String], failuresLeft: Int)>
    /// How long each answer takes (a slow receiver).
    private let delay: Duration

    init(failures: Int = 0, delay: Duration = .zero) {
        state = Mutex(([], failures))
        self.delay = delay
    }

    var payloads: [String] { state.withLock { $0.payloads } }

    func application(onServerRunning: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let router = Router()
        router.post("/notifications") { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            if self.delay > .zero { try await Task.sleep(for: self.delay) }
            let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            let fail = self.state.withLock { state -> Bool in
                if state.failuresLeft > 0 {
                    state.failuresLeft -= 1
                    return true
                }
                state.payloads.append(object?["signedPayload"] as? String ?? "")
                return false
            }
            return Response(status: fail ? .internalServerError : .ok)
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) }
        )
    }

    /// Waits until `count` payloads arrived (at most `timeout`).
    func waitFor(_ count: Int, timeout: Duration = .seconds(60)) async -> [String] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            let current = payloads
            if current.count >= count { return current }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return payloads
    }
}
