import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// `till probe`: asks a running `till serve` whether it is ready (or alive) and exits 0 if so, 1 if not. A
/// container's health check and a deploy script use it where the image has no curl (deploy/Containerfile).
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Ask a running till serve whether it is ready (GET /ready) or alive (--live: GET /health).",
        discussion: "Exits 0 when it answers 200, 1 otherwise, printing the answer. See docs/deploy.md."
    )

    @Option(help: "The server's address.") var url = "http://127.0.0.1:8080"
    @Flag(help: "Liveness (GET /health) instead of readiness (GET /ready).") var live = false
    @Option(help: "Seconds to wait for the answer.") var timeout: Double = 3

    func run() async throws {
        guard timeout > 0, timeout <= 300 else { throw ValidationError("--timeout is more than 0 and at most 300") }
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        let target = base + (live ? "/health" : "/ready")
        guard let parsed = URL(string: target), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil
        else {
            throw ValidationError("--url is an http:// or https:// address, not \(url)")
        }
        let answer: (Int, String)
        do {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: target),
                timeout: .milliseconds(Int64(timeout * 1000))
            )
            let body = try await response.body.collect(upTo: 1 << 16)
            answer = (Int(response.status.code), String(buffer: body))
        } catch {
            print("\(target): no answer (\(error))")
            throw ExitCode(1)
        }
        print("\(target): \(answer.0) \(answer.1)")
        if answer.0 != 200 { throw ExitCode(1) }
    }
}
