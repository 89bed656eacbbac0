import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// File operations that survive a crash or power loss at any instant: a file is either its old contents or its
/// new ones, never a mix, and a rename or removal is on disk before the call returns.
///
/// The recipe is POSIX's: write a temporary file in the same directory, `fsync` it, `rename` it over the target
/// (atomic within one file system), then `fsync` the directory so the rename itself is durable.
enum DurableFiles {
    /// Temporary files start with this; a crash can leave them behind, and ``removeLeftovers(in:)`` clears them.
    static let temporaryPrefix = ".tmp-"

    static func createDirectory(_ url: URL) throws(TillClientError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw TillClientError(.fileSystem, message: "cannot create \(url.path): \(error)")
        }
    }

    /// Replaces `url` with `bytes` atomically and durably.
    static func write(_ bytes: some Collection<UInt8>, to url: URL) throws(TillClientError) {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(temporaryPrefix + UUID().uuidString)
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw failure("create", temporary) }
        var ok = true
        Array(bytes).withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glue.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    ok = false
                    return
                }
                offset += written
            }
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else {
            let error = failure("write", temporary)
            unlink(temporary.path)
            throw error
        }
        guard rename(temporary.path, url.path) == 0 else {
            let error = failure("rename", url)
            unlink(temporary.path)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Moves `source` to `destination` (same file system) and makes both directories durable.
    static func move(_ source: URL, to destination: URL) throws(TillClientError) {
        guard rename(source.path, destination.path) == 0 else { throw failure("move", source) }
        try syncDirectory(destination.deletingLastPathComponent())
        if source.deletingLastPathComponent().standardizedFileURL
            != destination.deletingLastPathComponent()
            .standardizedFileURL
        {
            try syncDirectory(source.deletingLastPathComponent())
        }
    }

    /// Removes `url` (nothing if it is already gone) and makes the removal durable.
    static func remove(_ url: URL) throws(TillClientError) {
        if unlink(url.path) != 0 && errno != ENOENT { throw failure("remove", url) }
        try syncDirectory(url.deletingLastPathComponent())
    }

    /// `fsync` on a file that is open for writing elsewhere, by path.
    static func sync(_ url: URL) throws(TillClientError) {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw failure("open", url) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("sync", url) }
    }

    static func syncDirectory(_ url: URL) throws(TillClientError) {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw failure("open directory", url) }
        defer { close(fd) }
        guard fsync(fd) == 0 || errno == EINVAL else { throw failure("sync directory", url) }
    }

    /// Deletes temporary files a crash left in `directory`.
    static func removeLeftovers(in directory: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix(temporaryPrefix) {
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    static func read(_ url: URL) -> [UInt8]? {
        (try? Data(contentsOf: url)).map { Array($0) }
    }

    private static func failure(_ action: String, _ url: URL) -> TillClientError {
        TillClientError(.fileSystem, message: "cannot \(action) \(url.path): \(String(cString: strerror(errno)))")
    }
}

/// The C library's `write`, out of reach of the static method of the same name.
private enum Glue {
    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, buffer, count)
        #elseif canImport(Musl)
            Musl.write(fd, buffer, count)
        #else
            Darwin.write(fd, buffer, count)
        #endif
    }
}
