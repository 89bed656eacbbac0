import Foundation
import TillCatalogue
import TillLedger

/// How a download answers its conditional and range headers (RFC 9110 §13.1.2, §13.1.5, §14.2), for a file whose
/// strong ETag and size are known:
///
///     If-None-Match = "*" / #entity-tag           ; a match (weak comparison) answers 304
///     Range         = "bytes=" range-spec         ; one range; several are answered with the whole file
///     range-spec    = first-pos "-" [ last-pos ] / "-" suffix-length
///     If-Range      = entity-tag                  ; the range applies only if it equals the ETag (strong)
///
/// A Range the server cannot parse is ignored (the whole file is sent), as RFC 9110 allows; one that parses but
/// lies outside the file is unsatisfiable (416).
enum DownloadPlan: Sendable, Hashable {
    case notModified
    case whole
    case partial(ClosedRange<Int64>)
    case unsatisfiable

    static func plan(ifNoneMatch: [String], range: String?, ifRange: String?, etag: String, size: Int64)
        -> DownloadPlan
    {
        let candidates = ifNoneMatch.flatMap { $0.split(separator: ",") }.map {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
        }
        if candidates.contains(where: { $0 == "*" || $0 == etag }) { return .notModified }
        guard let range else { return .whole }
        if let ifRange, ifRange.trimmingCharacters(in: .whitespaces) != etag { return .whole }
        return resolve(range, size: size)
    }

    private static func resolve(_ header: String, size: Int64) -> DownloadPlan {
        let header = header.trimmingCharacters(in: .whitespaces)
        guard header.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = number(last) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - suffix)...(size - 1))
        }
        guard let start = number(first) else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard let given = number(last), given >= start else { return .whole }
            end = min(given, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start...end)
    }

    private static func number(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return Int64(text)
    }
}
