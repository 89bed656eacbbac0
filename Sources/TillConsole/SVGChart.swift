import Foundation

/// A bar chart drawn on the server as inline SVG: periods along the bottom, one bar per series in each, negative
/// values below the axis. No script: the console's charts are in the page as it arrives. Each bar carries its series
/// and value (`data-series`, `data-value`) and a tooltip; the chart has a title and a summary for screen readers.
package struct SVGChart {
    package struct Series {
        package var name: String
        package var values: [Int64]
        /// A fill with at least 3:1 contrast against the white page (WCAG's non-text contrast).
        package var color: String

        package init(name: String, values: [Int64], color: String) {
            self.name = name
            self.values = values
            self.color = color
        }
    }

    var id: String
    var title: String
    var labels: [String]
    var series: [Series]
    /// How a value reads (money, a count).
    var format: (Int64) -> String
    /// Whether the values add up (money, counts): the summary for screen readers gives each series' total, else each
    /// value (latencies).
    var additive = true

    package static let palette = ["#0b57b7", "#1e7b3a", "#b04a00", "#6b3fa0"]

    private let width = 640.0
    private let height = 260.0
    private let left = 78.0
    private let right = 12.0
    private let top = 30.0
    private let bottom = 42.0

    package init(
        id: String,
        title: String,
        labels: [String],
        series: [Series],
        additive: Bool = true,
        format: @escaping (Int64) -> String
    ) {
        self.id = id
        self.title = title
        self.labels = labels
        self.series = series
        self.additive = additive
        self.format = format
    }

    package var svg: String {
        let values = series.flatMap(\.values)
        let high = Self.nice(max(values.max() ?? 0, 0))
        let low = -Self.nice(-min(values.min() ?? 0, 0))
        let span = Double(max(high - low, 1))
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        func y(_ value: Int64) -> Double { top + plotHeight * Double(high - value) / span }
        let zero = y(0)
        let summary = series.map { line in
            additive
                ? "\(line.name): \(format(line.values.reduce(0, +))) in all"
                : "\(line.name): " + zip(labels, line.values).map { "\($0) \(format($1))" }.joined(separator: ", ")
        }.joined(separator: "; ")
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" \
            aria-labelledby="\(id)-title \(id)-desc" data-chart="\(Self.escape(id))">\
            <title id="\(id)-title">\(Self.escape(title))</title>\
            <desc id="\(id)-desc">\(Self.escape(labels.count == 1 ? labels[0] : "\(labels.first ?? "") to \(labels.last ?? "")")): \
            \(Self.escape(summary))</desc>
            """
        // The axis, the top of the scale and, when there are negative values, the bottom.
        for value in Set([high, 0, low]).sorted(by: >) {
            let at = y(value)
            out += """
                <line x1="\(left)" y1="\(Self.round(at))" x2="\(width - right)" y2="\(Self.round(at))" \
                stroke="\(value == 0 ? "#4d5560" : "#c9ced6")" stroke-width="1"/>\
                <text x="\(left - 6)" y="\(Self.round(at + 4))" text-anchor="end" font-size="12" fill="#1b1f24">\
                \(Self.escape(format(value)))</text>
                """
        }
        let count = max(labels.count, 1)
        let group = plotWidth / Double(count)
        let barWidth = max(1, group * 0.8 / Double(max(series.count, 1)))
        for (index, label) in labels.enumerated() {
            let start = left + group * Double(index) + group * 0.1
            for (number, line) in series.enumerated() where index < line.values.count {
                let value = line.values[index]
                let edge = y(value)
                let x = start + barWidth * Double(number)
                out += """
                    <rect x="\(Self.round(x))" y="\(Self.round(min(edge, zero)))" width="\(Self.round(barWidth))" \
                    height="\(Self.round(abs(zero - edge)))" fill="\(line.color)" data-series="\(Self.escape(line.name))" \
                    data-period="\(Self.escape(label))" data-value="\(value)"><title>\(Self.escape(label)), \
                    \(Self.escape(line.name)): \(Self.escape(format(value)))</title></rect>
                    """
            }
        }
        // At most eight labels along the bottom.
        let step = max(1, Int((Double(labels.count) / 8).rounded(.up)))
        for (index, label) in labels.enumerated() where index % step == 0 {
            let x = left + group * (Double(index) + 0.5)
            out += """
                <text x="\(Self.round(x))" y="\(Self.round(height - bottom + 16))" text-anchor="middle" font-size="12" \
                fill="#1b1f24">\(Self.escape(label))</text>
                """
        }
        if series.count > 1 {
            var x = left
            for line in series {
                out += """
                    <rect x="\(Self.round(x))" y="8" width="12" height="12" fill="\(line.color)"/>\
                    <text x="\(Self.round(x + 16))" y="18" font-size="12" fill="#1b1f24">\(Self.escape(line.name))</text>
                    """
                x += 24 + Double(line.name.count) * 7
            }
        }
        return out + "</svg>"
    }

    /// The smallest of 1, 2 or 5 times a power of ten that is at least `value` (0 for 0).
    static func nice(_ value: Int64) -> Int64 {
        guard value > 0 else { return 0 }
        var power: Int64 = 1
        while power <= value / 10 { power *= 10 }
        for factor: Int64 in [1, 2, 5, 10] where factor * power >= value { return factor * power }
        return 10 * power
    }

    private static func round(_ value: Double) -> String { String(format: "%.1f", value) }

    /// Text as XML character data or an attribute value.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
