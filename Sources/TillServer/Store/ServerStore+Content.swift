import Foundation

extension ServerStore {
    /// The secret every process of a deployment signs download URLs with when none is configured: the first
    /// process to start stores 32 random bytes (as hex), later ones and other processes read the same value.
    func sharedServerSecret() async throws -> [UInt8] {
        let hex = try await setting("server.secret") {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        return Array(hex.utf8)
    }
}
