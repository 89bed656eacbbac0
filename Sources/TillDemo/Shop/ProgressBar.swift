import Foundation
import Synchronization
import TillClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A download's progress on standard error, redrawn in place:
/// `[##############··············]  48%  2.2/4.5 MB  till-monthly-1.txt`.
///
/// Drawn only on a terminal: piped or redirected output gets no control characters.
final class ProgressBar: Sendable {
    private struct State {
        var name = ""
        var percent = -1
        var open = false
    }

    private let state = Mutex(State())
    let isEnabled: Bool

    init(isEnabled: Bool = isatty(STDERR_FILENO) != 0) {
        self.isEnabled = isEnabled
    }

    func update(_ progress: DownloadProgress) {
        let percent = progress.total > 0 ? Int(progress.received * 100 / progress.total) : 100
        let changed = state.withLock { state in
            guard state.name != progress.name || state.percent != percent else { return false }
            state.name = progress.name
            state.percent = percent
            state.open = true
            return true
        }
        guard changed, isEnabled else { return }
        FileHandle.standardError.write(Data(("\r" + Self.line(progress, percent: percent)).utf8))
    }

    /// Ends the line of the last bar drawn.
    func finish() {
        let open = state.withLock { state in
            defer { state = State() }
            return state.open
        }
        if open, isEnabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func line(_ progress: DownloadProgress, percent: Int, width: Int = 30) -> String {
        let filled = max(0, min(width, width * percent / 100))
        let bar = String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled)
        let size = String(
            format: "%.1f/%.1f MB",
            Double(progress.received) / 1_000_000,
            Double(progress.total) / 1_000_000
        )
        return "[\(bar)] \(String(format: "%3d", percent))%  \(size)  \(progress.name)"
    }
}
