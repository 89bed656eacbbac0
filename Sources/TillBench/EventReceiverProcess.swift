import Foundation
import Logging
import TillDevelopment

/// The webhook receiver `till bench events` measures against, in a process of its own so that its CPU is counted
/// apart from the server's: the child's side (`serve`, run as `till bench receiver`) and the benchmark's (`Driver`).
public enum EventReceiverProcess {
    /// `till bench receiver`: a webhook receiver that counts what it gets and answers 204, on a free loopback port;
    /// it prints `receiver on PORT`, then, for each line read on standard input, `received COUNT cpu_s SECONDS
    /// latencies_ms LIST`: the latencies of the deliveries since the last line, comma-separated (`-`: none).
    public static func serve() async throws {
        let receiver = WebhookReceiver(keep: false, timing: true)
        var quiet = Logger(label: "till.receiver")
        quiet.logLevel = .warning
        let ports = try await Ports.start({ receiver.application(logger: quiet, onServerRunning: $0) }, logger: quiet)
        let output = FileHandle.standardOutput
        output.write(Data("receiver on \(ports.port)\n".utf8))
        // Standard input is read on a thread of its own: a blocking read on the cooperative pool would take one of
        // the two threads the receiver's handlers run on.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                while readLine() != nil {
                    let latencies = receiver.takeLatencies().map(String.init).joined(separator: ",")
                    output.write(
                        Data(
                            "received \(receiver.count) cpu_s \(processCPUSeconds()) latencies_ms \(latencies.isEmpty ? "-" : latencies)\n"
                                .utf8
                        )
                    )
                }
                done.resume()
            }
        }
        await ports.stop()
    }

    /// The receiver's process, driven by the benchmark through its standard input and output.
    final class Driver {
        let process: Process
        let input: FileHandle
        let output: FileHandle
        let port: Int
        private var buffer = Data()

        private init(process: Process, input: FileHandle, output: FileHandle, port: Int, buffer: Data) {
            self.process = process
            self.input = input
            self.output = output
            self.port = port
            self.buffer = buffer
        }

        static func start() throws -> Driver {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
            if let path = Bundle.main.executablePath { process.executableURL = URL(fileURLWithPath: path) }
            process.arguments = ["bench", "receiver"]
            let stdin = Pipe()
            let stdout = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            try process.run()
            var buffer = Data()
            let line = readLine(stdout.fileHandleForReading, &buffer)
            guard let port = line.flatMap({ Int($0.replacingOccurrences(of: "receiver on ", with: "")) }) else {
                process.terminate()
                throw EventBenchmark.BenchmarkFailure(description: "the receiver did not start: \(line ?? "")")
            }
            return Driver(
                process: process,
                input: stdin.fileHandleForWriting,
                output: stdout.fileHandleForReading,
                port: port,
                buffer: buffer
            )
        }

        /// What it received so far, its CPU seconds, and the latencies (ms) of what it received since the last sample.
        func sample() throws -> (count: Int, cpu: Double, latencies: [Int64]) {
            try input.write(contentsOf: Data("\n".utf8))
            let fields = (Self.readLine(output, &buffer) ?? "").split(separator: " ")
            guard fields.count == 6, let count = Int(fields[1]), let cpu = Double(fields[3]) else {
                throw EventBenchmark.BenchmarkFailure(description: "the receiver answered \(fields.prefix(5))")
            }
            return (count, cpu, fields[5] == "-" ? [] : fields[5].split(separator: ",").compactMap { Int64($0) })
        }

        func stop() {
            try? input.close()
            process.waitUntilExit()
        }

        private static func readLine(_ handle: FileHandle, _ buffer: inout Data) -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer = Data(buffer[(newline + 1)...])
                    return line
                }
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                buffer.append(chunk)
            }
        }
    }
}
