import Crypto
import Foundation
import TillContract

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How far one file's download is.
public struct DownloadProgress: Sendable, Hashable {
    public var productId: String
    public var name: String
    /// Bytes of the file on disk so far, counting those of an earlier, interrupted attempt.
    public var received: Int64
    public var total: Int64
}

/// A file of a product, stored and checked.
public struct StoredFile: Sendable, Hashable {
    public var productId: String
    public var name: String
    public var sha256: String
    public var size: Int64
    /// Where it is.
    public var url: URL
    /// Bytes fetched by the call that answered this (0 when the file was already stored).
    public var transferred: Int64
    /// Where the download resumed a partial file from (`Range`), or 0.
    public var resumedFrom: Int64
}

/// Downloads the files of server-delivered products through the server's signed URLs, and keeps them.
///
/// A download goes to `partial/<sha256>` first. If it is interrupted, the next attempt sends
/// `Range: bytes=<size of the partial file>-` with `If-Range: "<sha256>"` (the server's ETag), and appends the
/// rest; a changed file answers 200 and starts over. The finished file's SHA-256 is checked against the server's
/// listing, then it is renamed into `products/<product id>/<name>` and the directory synced: a file under
/// `products` is always whole and correct.
///
/// Layout of ``directory``:
///
///     partial/<sha256>                  bytes received so far
///     products/<product id>/<name>      finished files
///     products/<product id>/.manifest   {name: {sha256, size}} of the finished files, replaced atomically
public actor ContentStore {
    public nonisolated let directory: URL
    private let server: TillServerClient
    private let http: HTTPService
    /// SHA-256s being downloaded now, with the callers waiting for the same file.
    private var inFlight: [String: [CheckedContinuation<Void, Never>]] = [:]

    struct ManifestEntry: Codable, Hashable {
        var sha256: String
        var size: Int64
    }

    /// - Parameters:
    ///   - timeout: how long to wait for a download to start answering.
    public init(
        directory: URL,
        server: TillServerClient,
        timeout: TimeInterval = 30,
        session: URLSession = TillHTTP.shared
    ) throws {
        self.directory = directory
        self.server = server
        http = HTTPService(baseURL: server.baseURL, bearer: nil, timeout: timeout, session: session)
        try DurableFiles.createDirectory(directory.appendingPathComponent("partial", isDirectory: true))
        try DurableFiles.createDirectory(directory.appendingPathComponent("products", isDirectory: true))
    }

    // MARK: Reading

    /// The finished files of a product.
    public func storedFiles(productId: String) -> [StoredFile] {
        manifest(productId).sorted { $0.key < $1.key }.compactMap { name, entry in
            let url = fileURL(productId: productId, name: name)
            guard FileManager.default.fileExists(atPath: url.path) else { return nil }
            return StoredFile(
                productId: productId,
                name: name,
                sha256: entry.sha256,
                size: entry.size,
                url: url,
                transferred: 0,
                resumedFrom: 0
            )
        }
    }

    /// Whether `file` of `productId` is stored whole, as the server lists it now.
    public func isStored(_ file: CatalogueFile, productId: String) -> Bool {
        stored(file, productId: productId) != nil
    }

    /// Whether every file is stored.
    public func isStored(_ files: [CatalogueFile], productId: String) -> Bool {
        files.allSatisfy { isStored($0, productId: productId) }
    }

    /// The bytes of an interrupted download of `sha256` kept so far.
    public func partialSize(sha256: String) -> Int64 {
        Self.size(of: partialURL(sha256)) ?? 0
    }

    // MARK: Downloading

    /// Makes sure every file of `productId` the server offers `customerId` is stored: asks the server for signed
    /// URLs (which it refuses with `notEntitled` when the customer may not have them), then downloads what is
    /// missing, resuming partial files. Files already stored are not fetched again.
    ///
    /// Cancelling the task stops the download and keeps the partial file for the next attempt.
    public func download(
        productId: String,
        customerId: String,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> [StoredFile] {
        var links = try await server.downloads(customerId: customerId, productId: productId)
        var results: [StoredFile] = []
        var index = 0
        var renewed = false
        while index < links.count {
            let link = links[index]
            do {
                results.append(try await download(link, productId: productId, progress: progress))
                index += 1
            } catch let error as TillClientError where error.code == "urlExpired" && !renewed {
                // The links outlived their lifetime (a long download before this one): ask for fresh ones.
                renewed = true
                links = try await server.downloads(customerId: customerId, productId: productId)
                index = 0
                results = []
            }
        }
        return results
    }

    /// Downloads one file through a signed link, unless it is stored already.
    public func download(
        _ link: ContentLink,
        productId: String,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> StoredFile {
        let file = link.file
        try Self.validate(name: file.name)
        guard Self.isSHA256(file.sha256) else {
            throw TillClientError(.invalidResponse, message: "the server listed \(file.name) with a bad SHA-256")
        }
        if let stored = stored(file, productId: productId) { return stored }
        // One download per file at a time: a second caller waits for the first, then finds the file stored.
        while inFlight[file.sha256] != nil {
            await withCheckedContinuation { inFlight[file.sha256, default: []].append($0) }
        }
        if let stored = stored(file, productId: productId) { return stored }
        inFlight[file.sha256] = []
        defer {
            for waiter in inFlight.removeValue(forKey: file.sha256) ?? [] { waiter.resume() }
        }
        let fetched = try await fetch(link, productId: productId, progress: progress)
        try place(file, productId: productId)
        return StoredFile(
            productId: productId,
            name: file.name,
            sha256: file.sha256,
            size: file.size,
            url: fileURL(productId: productId, name: file.name),
            transferred: fetched.transferred,
            resumedFrom: fetched.resumedFrom
        )
    }

    /// Deletes a product's files (the customer lost access, or the app frees space). They can be downloaded again
    /// while the customer is entitled.
    public func remove(productId: String) throws {
        let folder = productFolder(productId)
        guard FileManager.default.fileExists(atPath: folder.path) else { return }
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            throw TillClientError(.fileSystem, message: "cannot remove \(folder.path): \(error)")
        }
        try DurableFiles.syncDirectory(folder.deletingLastPathComponent())
    }

    // MARK: Internals

    /// Fetches the bytes into the partial file and checks them; answers how many came this time.
    private func fetch(
        _ link: ContentLink,
        productId: String,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> (transferred: Int64, resumedFrom: Int64) {
        let file = link.file
        let partial = partialURL(file.sha256)
        var offset = Self.size(of: partial) ?? 0
        if offset > file.size {
            try DurableFiles.remove(partial)
            offset = 0
        }
        if offset == file.size, offset > 0 {
            if try Self.sha256(of: partial) == file.sha256 { return (0, offset) }
            try DurableFiles.remove(partial)
            offset = 0
        }
        var headers: [(String, String)] = []
        if offset > 0 {
            headers = [("Range", "bytes=\(offset)-"), ("If-Range", "\"\(file.sha256)\"")]
        }
        var request = try http.request("GET", link.url, headers: headers)
        request.setValue("*/*", forHTTPHeaderField: "Accept")
        let response = try await http.stream(request)
        let status = response.status
        var start: Int64
        switch status {
        case 206:
            guard let range = response.header("Content-Range"), Self.rangeStart(range) == offset else {
                throw TillClientError(
                    .invalidResponse,
                    status: status,
                    message: "the server answered another range than bytes=\(offset)-"
                )
            }
            start = offset
        case 200:
            start = 0
        case 416:
            // The partial file is not a prefix the server can continue: start over next time.
            try DurableFiles.remove(partial)
            throw TillClientError(
                .refused,
                status: 416,
                message: "the partial download of \(file.name) was unusable"
            )
        default:
            let bytes = (try? await response.collect(upTo: 64 * 1024)) ?? []
            throw HTTPService.failure(status: status, body: bytes)
        }
        let transferred = try await Self.write(
            response.body,
            to: partial,
            from: start,
            limit: file.size,
            url: request.url
        ) { received in
            progress?(DownloadProgress(productId: productId, name: file.name, received: received, total: file.size))
        }
        let outcome = (transferred, start)
        try DurableFiles.sync(partial)
        guard Self.size(of: partial) == file.size, try Self.sha256(of: partial) == file.sha256 else {
            try DurableFiles.remove(partial)
            throw TillClientError(
                .checksumMismatch,
                message: "\(file.name) does not match the SHA-256 the server listed; it will be downloaded again"
            )
        }
        return outcome
    }

    /// Writes the body into `url` from byte `start` (truncating what follows), and answers the bytes written.
    private static func write(
        _ body: AsyncThrowingStream<Data, any Error>,
        to url: URL,
        from start: Int64,
        limit: Int64,
        url source: URL?,
        progress: (Int64) -> Void
    ) async throws -> Int64 {
        if !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw TillClientError(.fileSystem, message: "cannot create \(url.path)")
            }
        }
        let handle: FileHandle
        do {
            handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: UInt64(start))
            try handle.seek(toOffset: UInt64(start))
        } catch {
            throw TillClientError(.fileSystem, message: "cannot write \(url.path): \(error)")
        }
        defer { try? handle.close() }
        var written: Int64 = 0
        do {
            for try await chunk in body {
                guard start + written + Int64(chunk.count) <= limit else {
                    throw TillClientError(.invalidResponse, message: "the download is longer than the listed size")
                }
                do {
                    try handle.write(contentsOf: chunk)
                } catch {
                    throw TillClientError(.fileSystem, message: "cannot write \(url.path): \(error)")
                }
                written += Int64(chunk.count)
                progress(start + written)
                try Task.checkCancellation()
            }
        } catch let error as TillClientError {
            throw error
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            // The connection broke or stalled mid-file: what arrived stays in the partial file for a resume.
            throw HTTPService.transportFailure(error, url: source)
        }
        return written
    }

    /// Moves a checked partial file into place and records it in the product's manifest.
    private func place(_ file: CatalogueFile, productId: String) throws {
        let folder = productFolder(productId)
        try DurableFiles.createDirectory(folder)
        try DurableFiles.move(partialURL(file.sha256), to: fileURL(productId: productId, name: file.name))
        var entries = manifest(productId)
        entries[file.name] = ManifestEntry(sha256: file.sha256, size: file.size)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try DurableFiles.write(Array((try? encoder.encode(entries)) ?? Data()), to: manifestURL(productId))
    }

    private func stored(_ file: CatalogueFile, productId: String) -> StoredFile? {
        guard let entry = manifest(productId)[file.name], entry.sha256 == file.sha256, entry.size == file.size else {
            return nil
        }
        let url = fileURL(productId: productId, name: file.name)
        guard Self.size(of: url) == file.size else { return nil }
        return StoredFile(
            productId: productId,
            name: file.name,
            sha256: file.sha256,
            size: file.size,
            url: url,
            transferred: 0,
            resumedFrom: 0
        )
    }

    private func manifest(_ productId: String) -> [String: ManifestEntry] {
        DurableFiles.read(manifestURL(productId)).flatMap {
            try? JSONDecoder().decode([String: ManifestEntry].self, from: Data($0))
        } ?? [:]
    }

    private func productFolder(_ productId: String) -> URL {
        directory.appendingPathComponent("products", isDirectory: true)
            .appendingPathComponent(PathComponent.encode(productId), isDirectory: true)
    }

    private func manifestURL(_ productId: String) -> URL {
        productFolder(productId).appendingPathComponent(".manifest")
    }

    /// Where a finished file of a product is kept.
    public func fileURL(productId: String, name: String) -> URL {
        productFolder(productId).appendingPathComponent(name)
    }

    private func partialURL(_ sha256: String) -> URL {
        directory.appendingPathComponent("partial", isDirectory: true).appendingPathComponent(sha256)
    }
}
