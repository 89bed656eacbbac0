import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TillAppStore
import TillContract

/// `till import --app BUNDLE FILE`: brings the customers an app already has into a running `till serve`, through its
/// admin API (`POST /admin/v1/apps/{bundle}/imports`), and follows the import to its end with a progress bar and a
/// summary. The server does the work: killing this command leaves the import running, and running it again with the
/// same file follows that import (docs/operations.md, "Importing existing customers").
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Import the customers an app already has, from Apple's Transaction History, into a running till serve.",
        discussion: """
            FILE is CSV with a header row, or JSON lines: each row a customerId and one of transactionId \
            (or originalTransactionId), appReceipt or signedTransaction. Exits 0 when every row was imported, \
            already known or refused (the summary says why), 1 when a row failed or the import could not run. \
            See docs/operations.md, "Importing existing customers".
            """
    )

    @Option(help: "The app's bundle id.") var app: String
    @Argument(help: "The file of customers (CSV or JSON lines).") var file: String
    @Option(help: "The server's address.") var url = "http://127.0.0.1:8080"
    @Option(help: "The operator token (default: $TILL_OPERATOR_TOKEN).") var token: String?
    @Option(help: "What the import is called in lists (default: the file's name).") var name: String?
    @Flag(help: "Start the import and exit, without following it.") var detach = false

    func run() async throws {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        guard let parsed = URL(string: base), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw ValidationError("--url is an http:// or https:// address, not \(url)")
        }
        guard let token = token ?? ProcessInfo.processInfo.environment["TILL_OPERATOR_TOKEN"], !token.isEmpty else {
            throw ValidationError("the admin API needs the operator token: --token, or TILL_OPERATOR_TOKEN")
        }
        // The size before the contents: a file past the server's limit is refused here in words, not read whole into
        // memory and then cut off by the server halfway through its upload.
        if let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int,
            size > Imports.maximumFileBytes
        {
            throw ValidationError(
                "\(file) is \(size >> 20) MiB; till serve takes at most \(Imports.maximumFileBytes >> 20) MiB in one import: split it into files of at most that size and import each"
            )
        }
        guard let bytes = FileManager.default.contents(atPath: file) else {
            throw ValidationError("cannot read \(file)")
        }
        let api = AdminAPI(base: base + "/admin/v1/apps/" + Self.segment(app) + "/imports", token: token)
        // JSON lines when the first character (after a byte order mark and blanks) opens an object, as the server reads.
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        let jsonLines = text.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "{")
        let query = "?name=" + Self.segment(name ?? URL(fileURLWithPath: file).lastPathComponent)
        let status: Int
        let started: [UInt8]
        do {
            (status, started) = try await api.send(
                "POST",
                query,
                body: Array(bytes),
                contentType: jsonLines ? "application/x-ndjson" : "text/csv"
            )
        } catch  where AdminAPI.isUnreachable(error) {
            throw CommandError("cannot reach till serve at \(base) (\(error)); is it running there?")
        } catch {
            throw CommandError("till serve at \(base) did not answer the import (\(error))")
        }
        var current = try decodeImport(status, started, expecting: [200, 202])
        print(
            status == 202
                ? "import \(current.id) of \(app): \(current.rows.total) rows received"
                : "import \(current.id) of \(app) was under way with this file: following it"
        )
        if detach {
            print("follow it with: till import --app \(app) \(file)")
            return
        }
        let progress = Progress()
        var unanswered = 0
        while current.state == .receiving || current.state == .running {
            progress.draw(current)
            try await Task.sleep(for: .seconds(1))
            do {
                let (status, body) = try await api.send("GET", "/" + current.id)
                current = try decodeImport(status, body, expecting: [200])
                unanswered = 0
            } catch let error as CommandError {
                throw error
            } catch {
                // The server restarting: the import resumes there; wait a minute for it before giving up.
                unanswered += 1
                if unanswered == 1 { progress.note("the server does not answer (\(error)); waiting for it") }
                guard unanswered < 60 else {
                    print(
                        "the server did not answer for a minute; the import goes on there: run this again to follow it"
                    )
                    throw ExitCode(1)
                }
            }
        }
        progress.finish(current)
        print(Self.summary(current))
        if current.rows.refused + current.rows.failed > 0 {
            print(
                "the rows: GET \(base)/admin/v1/apps/\(Self.segment(app))/imports/\(current.id)/rows?outcome=refused (or failed)"
            )
        }
        if current.state == .cancelled || current.rows.failed > 0 { throw ExitCode(1) }
    }

    /// The import in an answer, or the server's refusal printed and exit status 1.
    private func decodeImport(_ status: Int, _ body: [UInt8], expecting: Set<Int>) throws -> ImportView {
        guard expecting.contains(status) else {
            let error = try? JSONDecoder().decode(Components.Schemas._Error.self, from: Data(body))
            throw CommandError(
                error.map { "\(status) \($0.error.code): \($0.error.message)" }
                    ?? "\(status) \(String(decoding: body.prefix(300), as: UTF8.self))"
            )
        }
        do {
            return try JSONDecoder().decode(ImportView.self, from: Data(body))
        } catch {
            throw CommandError("the server's answer is not an import: \(error)")
        }
    }

    /// What the import did, for the terminal.
    static func summary(_ view: ImportView) -> String {
        let rows = view.rows
        let transactions = view.transactions
        let outcome =
            "\(rows.imported) imported, \(rows.alreadyKnown) already known, \(rows.refused) refused, \(rows.failed) failed"
        let unread = rows.pending > 0 ? ", \(rows.pending) not read" : ""
        let moved =
            "\(transactions.recorded) recorded, \(transactions.updated) updated, \(transactions.revoked) revoked"
        let kept =
            "\(transactions.unchanged) already known, \(transactions.ownedByAnotherCustomer) owned by another customer, \(transactions.unverifiable) unverifiable"
        var lines = [
            "import \(view.id) \(view.state.rawValue): \(rows.total) rows; \(outcome)\(unread)",
            "transactions: \(moved), \(kept)",
        ]
        for refusal in view.refusedBy { lines.append("  \(refusal.reason.rawValue): \(refusal.count)") }
        return lines.joined(separator: "\n")
    }

    /// A path or query segment, percent-encoded.
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }
}

/// An import as the admin API answers it.
typealias ImportView = Components.Schemas.Import

/// A refusal to print as it is, with exit status 1.
private struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The admin API's imports, with the operator token.
private struct AdminAPI {
    let base: String
    let token: String

    /// A connection that cannot be made fails the request at once: `HTTPClient.shared` tries again until the request's
    /// deadline, and a server that is not running kept the command silent for 90 s before it said so. The polls
    /// while an import runs wait for a restarting server themselves (a minute).
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Whether a request failed before a connection was made (nothing listens, the address does not resolve, the
    /// connection timed out), as against one that connected and then got no answer (the connection closed, the
    /// deadline passed): only the first means the server is not there.
    static func isUnreachable(_ error: any Error) -> Bool {
        if error is NIOConnectionError { return true }
        // A connection refused is a socket error with its errno (the pool does not wrap it when it does not retry).
        if let error = error as? IOError {
            return [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL].contains(error.errnoCode)
        }
        if case ChannelError.connectTimeout = error { return true }
        if let error = error as? HTTPClientError {
            return [.connectTimeout, .getConnectionFromPoolTimeout, .invalidURL].contains(error)
        }
        return false
    }

    func send(_ method: String, _ path: String, body: [UInt8]? = nil, contentType: String? = nil) async throws
        -> (Int, [UInt8])
    {
        var request = HTTPClientRequest(url: base + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType ?? "application/octet-stream")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await Self.client.execute(request, timeout: .minutes(10))
        let answer = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), Array(answer.readableBytesView))
    }
}

/// The progress bar on a terminal (standard error, redrawn in place), or a line at each tenth elsewhere.
private final class Progress {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let started = Date()
    private var lastTenth = -1

    func draw(_ view: ImportView) {
        let rows = view.rows
        let share = rows.total == 0 ? 1 : Double(rows.done) / Double(rows.total)
        let elapsed = Date().timeIntervalSince(started)
        // A rate over less than a second is noise (the first line, drawn as the rows known already are counted, said
        // 4194304 rows/s): none until a second has passed.
        let rate = elapsed >= 1 ? Double(rows.done) / elapsed : nil
        let left = rate.flatMap { $0 > 0 ? Int(Double(rows.total - rows.done) / $0) : nil }
        let bar = String(repeating: "█", count: Int(share * 20)) + String(repeating: "░", count: 20 - Int(share * 20))
        let eta = left.map { " · ETA \($0 / 60):" + String(format: "%02d", $0 % 60) } ?? ""
        let counts =
            "imported \(rows.imported) known \(rows.alreadyKnown) refused \(rows.refused) failed \(rows.failed)"
        let retrying = rows.retrying > 0 ? " (retrying \(rows.retrying))" : ""
        let waiting = view.lastError.map { " · waiting: \($0)" } ?? ""
        let line =
            "[\(bar)] \(rows.done)/\(rows.total) \(Int(share * 100))%\(rate.map { " · \(Int($0)) rows/s" } ?? "")\(eta) · \(counts)\(retrying)\(waiting)"
        if isTerminal {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        } else if Int(share * 10) != lastTenth {
            lastTenth = Int(share * 10)
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    func note(_ text: String) {
        FileHandle.standardError.write(Data(((isTerminal ? "\n" : "") + text + "\n").utf8))
    }

    func finish(_ view: ImportView) {
        draw(view)
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
