import Foundation

/// Standard input, line by line, read on a thread of its own so that waiting for the person at the keyboard
/// takes no thread from Swift's concurrency pool.
enum LineReader {
    static func standardInput() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }
}
