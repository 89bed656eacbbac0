import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A PostgreSQL server of a test's own, which the test may stop and start again: an outage of the database under a
/// running `till serve`, without touching the server other tests share (`TILL_TEST_POSTGRES_URL`).
///
/// Made with Debian's binaries (`/usr/lib/postgresql/*/bin`, installed by `.ci/postgres.sh`), run as the `postgres`
/// user through `runuser`, so it needs root, as CI has.
public final class PrivatePostgres: Sendable {
    public let directory: URL
    public let port: Int
    let bin: String

    /// `postgres://…` of its `till` database.
    public var url: String { "postgres://postgres@127.0.0.1:\(port)/till?sslmode=disable" }

    /// Debian's server binaries, when there are some and this process may run them as `postgres`.
    public static var binaries: String? {
        guard getuid() == 0, FileManager.default.fileExists(atPath: "/usr/sbin/runuser"),
            let versions = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")
        else { return nil }
        let bins = versions.sorted { $0.compare($1, options: .numeric) == .orderedAscending }
            .map { "/usr/lib/postgresql/\($0)/bin" }
            .filter { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") }
        return bins.last
    }

    public static let prerequisite = Prerequisite(
        "a PostgreSQL server of the test's own (Debian's postgresql, run as root)",
        hint: "apt-get install postgresql, and run the tests as root, as .ci/run does",
        isAvailable: binaries != nil
    )

    private init(directory: URL, port: Int, bin: String) {
        self.directory = directory
        self.port = port
        self.bin = bin
    }

    /// Creates a cluster in a temporary folder, starts it on a free port, and creates the `till` database.
    public static func start() async throws -> PrivatePostgres {
        try prerequisite.require()
        guard let bin = binaries else { throw TestSupportFailure("no PostgreSQL binaries") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server = PrivatePostgres(directory: directory, port: try freePort(), bin: bin)
        try await server.run(["/bin/chown", "postgres:postgres", directory.path])
        try await server.asPostgres(
            "\(bin)/initdb", "-D", directory.path, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8",
            "--locale=C.UTF-8"
        )
        try await server.startAgain()
        try await server.run([
            "/usr/bin/env", "psql", "postgresql://postgres@127.0.0.1:\(server.port)/postgres", "-qc",
            "CREATE DATABASE till",
        ])
        return server
    }

    /// Starts the stopped server again (same data, same port).
    public func startAgain() async throws {
        try await asPostgres(
            "\(bin)/pg_ctl", "-D", directory.path, "-l", directory.appendingPathComponent("server.log").path, "-w",
            "-t", "30", "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory.path) -c fsync=off", "start"
        )
    }

    /// Stops the server at once (`-m immediate`: connections are cut, as when the machine or the process dies).
    public func stop() async throws {
        try await asPostgres("\(bin)/pg_ctl", "-D", directory.path, "-m", "immediate", "-w", "stop")
    }

    /// Stops it if it runs and removes its folder.
    public func remove() async {
        _ = try? await asPostgres("\(bin)/pg_ctl", "-D", directory.path, "-m", "immediate", "-w", "stop")
        try? FileManager.default.removeItem(at: directory)
    }

    private func asPostgres(_ arguments: String...) async throws {
        try await run(["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments)
    }

    private func run(_ arguments: [String]) async throws {
        let (status, output) = try await ChildProcess.run(arguments[0], Array(arguments.dropFirst()))
        guard status == 0 else {
            throw TestSupportFailure("\(arguments.joined(separator: " ")) failed (\(status)): \(output)")
        }
    }

    /// A TCP port nothing listens on now (bound, read, released).
    public static func freePort() throws -> Int {
        #if os(Linux)
            let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let socket = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw TestSupportFailure("socket() failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else { throw TestSupportFailure("bind() failed") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { throw TestSupportFailure("getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
