import Foundation

/// How `till demo` and `till shop` write durations, sizes, spans of time and columns.
enum TextFormat {
    static func duration(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        return String(format: "%.1f s", seconds)
    }

    static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }

    /// A span of simulated time in the units a reader expects of subscriptions.
    static func span(milliseconds: Int64) -> String {
        let minutes = Double(milliseconds) / 60_000
        if abs(minutes) < 120 { return String(format: "%.0f min", minutes) }
        if abs(minutes) < 48 * 60 { return String(format: "%.1f h", minutes / 60) }
        return String(format: "%.0f days", minutes / 1440)
    }

    /// `text` padded to `width` characters (and one space when it is longer).
    static func column(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    /// `text`'s words in lines of at most `width` characters.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
