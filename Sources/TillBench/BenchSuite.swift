import Foundation
import TillDevelopment

/// `till bench all`: every benchmark once, each in a child process of this program (so that one's memory, caches and
/// background work do not weigh on the next), and one table of their headline figures with the command behind each.
///
/// The children print what `till bench NAME` prints; the table takes its figures from their `key=value` lines, the
/// same text an operator reads, so the table cannot say what the benchmark did not.
public enum BenchSuite {
    /// One benchmark run: the arguments after `till`, and the figures the table shows from its output.
    struct Step {
        var title: String
        var arguments: [String]
        var figures: (String) throws -> String
    }

    /// The steps, in the order they run. The console's ledger is smaller than docs/benchmarks.md's million (written in
    /// 12.5 min) so that the whole suite stays under 10 minutes; `ledger` names an existing one to use instead.
    static func steps(ledger: String?, scratch: URL) -> [Step] {
        let ledgerFile = ledger ?? scratch.appendingPathComponent("ledger.sqlite").path
        var steps = [
            Step(title: "verification: es256 (one core's ceiling)", arguments: ["bench", "es256", "--seconds", "3"]) {
                try operations($0, "es256")
            },
            Step(title: "verification: jws", arguments: ["bench", "jws", "--seconds", "3"]) { try operations($0, "jws") },
            Step(title: "verification: receipt (10 purchases)", arguments: ["bench", "receipt", "--seconds", "3"]) {
                try operations($0, "receipt")
            },
        ]
        for (rate, history) in [(500, 0), (1000, 0), (1000, 10_000)] {
            var arguments = ["bench", "submissions", "--rate", "\(rate)", "--seconds", "10"]
            if history > 0 { arguments += ["--history", "\(history)"] }
            steps.append(
                Step(
                    title: "submissions at \(rate)/s" + (history > 0 ? ", customers with \(history) purchases" : ""),
                    arguments: arguments
                ) { output in
                    let submissions = try line(output, "submissions")
                    let cpu = try line(output, "cpu")
                    let confirmations = try line(output, "confirmations")
                    let writer = try value(submissions, "writer_busy_while_sending_pct")
                    return "ack p50 \(try value(submissions, "ack_p50_ms")) ms, p99 \(try value(submissions, "ack_p99_ms")) ms "
                        + "(the SQLite writer busy \(writer)% of the sending); "
                        + "\(try value(cpu, "per_purchase_ms")) ms CPU a purchase; "
                        + "all confirmed after \(try value(confirmations, "all_done_after_s")) s"
                }
            )
        }
        steps.append(
            Step(title: "customer reads", arguments: ["bench", "reads"]) { output in
                let reads = try line(output, "customer_reads")
                let bare = try line(output, "bare_route")
                return "\(try value(reads, "reads_per_sec"))/s, \(try value(reads, "ratio_to_bare")) of a bare route "
                    + "(\(try value(bare, "reads_per_sec"))/s); p99 \(try value(reads, "p99_ms")) ms"
            }
        )
        steps.append(
            Step(title: "events: one endpoint's cost, and a backlog", arguments: ["bench", "events", "--rounds", "3"]) {
                output in
                let added = try line(output, "added_per_purchase_ms_median")
                let backlog = try line(output, "backlog")
                return "+\(try value(added, "added_per_purchase_ms_median")) ms CPU a purchase; "
                    + "backlog \(try value(backlog, "delivered_per_s")) events/s"
            }
        )
        if ledger == nil {
            steps.append(
                Step(
                    title: "console's ledger (100,000 transactions, 10,000 customers)",
                    arguments: ["bench", "ledger", "--database-url", ledgerFile, "--transactions", "100000",
                                "--customers", "10000"]
                ) { _ in "written" }
            )
        }
        steps.append(
            Step(title: "console pages", arguments: ["bench", "console", "--database-url", ledgerFile, "--iterations", "10"]) {
                output in
                let pages = output.split(separator: "\n").filter { $0.contains(" p50_ms=") }
                let slowest = try pages.map { (String($0), try Double(value(String($0), "p50_ms")) ?? 0) }
                    .max { $0.1 < $1.1 }
                guard let slowest else { throw BenchmarkFailure("console printed no page") }
                let name = slowest.0.components(separatedBy: " p50_ms=")[0].trimmingCharacters(in: .whitespaces)
                return "\(pages.count) pages; slowest p50 \(String(format: "%.1f", slowest.1)) ms (\(name))"
            }
        )
        steps.append(
            Step(title: "limits: the worst input of each", arguments: ["bench", "limits", "--seconds", "1"]) { output in
                // | limit | worst input | runs | median | slowest | peak memory |
                let rows = output.split(separator: "\n").map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
                    .filter { $0.count >= 6 && $0[3].hasSuffix(" ms") }
                func milliseconds(_ cell: String) -> Double { Double(cell.dropLast(3)) ?? 0 }
                guard let worst = rows.max(by: { milliseconds($0[3]) < milliseconds($1[3]) }) else {
                    throw BenchmarkFailure("limits printed no row")
                }
                return "\(rows.count) limits; slowest median \(worst[3]) (\(worst[0]))"
            }
        )
        return steps
    }

    /// Runs every step and answers the table; each child's own output is kept in the answer too, below the table.
    public static func run(executable: String, ledger: String?) async throws -> String {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("till-bench-all-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let clock = ContinuousClock()
        let start = clock.now
        var table = "| benchmark | figures | seconds | command |\n|---|---|---|---|\n"
        var outputs = ""
        for step in steps(ledger: ledger, scratch: scratch) {
            say("till bench all: \(step.title)…")
            let began = clock.now
            let output = try child(executable, step.arguments)
            let took = clock.now - began
            // The scratch ledger's path is this run's own: the table names it as a file a reader would make.
            let command = "till " + step.arguments.joined(separator: " ")
                .replacingOccurrences(of: scratch.path + "/", with: "")
            table += "| \(step.title) | \(try step.figures(output)) | \(Int(took.components.seconds)) | `\(command)` |\n"
            outputs += "\n$ \(command)\n\(output)"
        }
        let total = clock.now - start
        return table + "\nall in \(total.components.seconds) s\n" + outputs
    }

    /// The child's standard output; its progress (standard error) goes to ours.
    static func child(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkFailure("till \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The output's first line that starts with `name` and a space.
    static func line(_ output: String, _ name: String) throws -> String {
        guard let found = output.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "=") })
        else { throw BenchmarkFailure("no line \(name) in:\n\(output)") }
        return String(found)
    }

    /// The value of `key=` in `line` (up to the next space).
    static func value(_ line: String, _ key: String) throws -> String {
        guard let range = line.range(of: " \(key)=") ?? (line.hasPrefix("\(key)=") ? line.range(of: "\(key)=") : nil)
        else { throw BenchmarkFailure("no \(key)= in: \(line)") }
        // The console pads its figures (`p50_ms=    1.2`).
        let rest = line[range.upperBound...].drop { $0 == " " }
        return String(rest.prefix { $0 != " " })
    }

    /// A verification line's best round and median: `jws ops_per_sec=… p50_us=…`.
    static func operations(_ output: String, _ name: String) throws -> String {
        let found = try line(output, name)
        return "\(try value(found, "ops_per_sec"))/s (best second), p50 \(try value(found, "p50_us")) µs"
    }
}
