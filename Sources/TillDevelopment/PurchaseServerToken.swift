import Foundation

/// An operator token made at start, for a development server started without one (`till serve`, `till demo`).
public enum PurchaseServerToken {
    public static func make() -> String {
        "op_" + (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
