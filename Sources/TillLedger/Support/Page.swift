import Foundation
import TillCore
import TillFormats

/// One page of an admin list: its items in a stable order, the cursor of the next page (nil on the last page),
/// and how many items the whole list has.
///
/// Hand-written beside the contract's `AppPage`, `ProductPage`, `ContentFilePage` and `SubmissionPage` (a missing
/// feature, not a measurement): the generated encoder leaves a nil `nextCursor` out, and the contract promises
/// `null` on the last page (apple/swift-openapi-generator#934, open). `everyAdminListPagesWithACursorAndATotal`
/// decodes these bytes with the generated page types.
public struct Page<Item: Codable & Sendable>: Codable, Sendable {
    public var items: [Item]
    public var nextCursor: String?
    public var total: Int

    /// Page `request` of a whole list held in memory (apps, a catalogue, a product's files: small lists), sorted by
    /// `key` here.
    package static func of(_ all: [Item], key: (Item) -> PageKey, _ request: PageRequest) -> Page {
        let sorted = all.map { (key($0), $0) }.sorted { $0.0 < $1.0 }
        let rest = request.after.map { after in sorted.filter { $0.0 > after } } ?? sorted
        return Page(
            items: rest.prefix(request.limit).map(\.1),
            nextCursor: rest.count > request.limit ? rest[request.limit - 1].0.cursor : nil,
            total: all.count
        )
    }

    private enum CodingKeys: String, CodingKey { case items, nextCursor, total }

    /// `nextCursor` is written `null` on the last page (as the document says), not left out: a client that loops
    /// "until it is null" must see it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)
        try container.encode(total, forKey: .total)
    }

    package func map<T>(_ transform: (Item) throws -> T) rethrows -> Page<T> {
        Page<T>(items: try items.map(transform), nextCursor: nextCursor, total: total)
    }

    package init(
        items: [Item],
        nextCursor: String? = nil,
        total: Int
    ) {
        self.items = items
        self.nextCursor = nextCursor
        self.total = total
    }
}

/// Where a page starts: after the item with this sort key. Every admin list is ordered by a number (a time, a
/// position), then by a text unique in the list (an id, a name), so a key names one place even when items come
/// and go between pages.
package struct PageKey: Codable, Comparable, Sendable {
    package var number: Int64
    package var text: String

    package static func < (a: PageKey, b: PageKey) -> Bool { (a.number, a.text) < (b.number, b.text) }

    /// The opaque cursor a client sends back: the key as JSON, base64url.
    package var cursor: String {
        let json = (try? JSONEncoder().encode(self)) ?? Data()
        return Base64.encode(json, alphabet: .url)
    }

    package init(number: Int64, text: String) {
        self.number = number
        self.text = text
    }

    package init?(cursor: String) {
        guard cursor.utf8.count <= 1024, let bytes = Base64.decode(cursor, alphabet: .url),
            let key = try? JSONDecoder().decode(PageKey.self, from: Data(bytes))
        else { return nil }
        self = key
    }
}

extension PageRequest {
    /// The rows to read for the page: one more than it shows, which tells whether another page follows.
    package var rowsToRead: Int { limit + 1 }

    /// Of the rows read for the page (`rowsToRead` at most, in the list's order): those it shows, and the next page's
    /// cursor, the last shown row's `key` (nil on the last page).
    package func cut<Row>(_ rows: [Row], key: (Row) -> PageKey) -> (shown: [Row], nextCursor: String?) {
        let shown = Array(rows.prefix(limit))
        return (shown, rows.count > limit ? shown.last.map { key($0).cursor } : nil)
    }

    /// The page made of the rows read for it (as `cut` takes them): the rows it shows, each made an item, the next
    /// page's cursor, and the whole list's `total`, counted once the rows are read.
    package func page<Row, Item>(
        _ rows: [Row],
        key: (Row) -> PageKey,
        item: (Row) async throws -> Item,
        total: () async throws -> Int
    ) async throws -> Page<Item> {
        let (shown, nextCursor) = cut(rows, key: key)
        var items: [Item] = []
        items.reserveCapacity(shown.count)
        for row in shown { items.append(try await item(row)) }
        return Page(items: items, nextCursor: nextCursor, total: try await total())
    }
}

/// `?limit=` (1–1000, 100 by default) and `?cursor=` (a previous page's `nextCursor`).
public struct PageRequest: Sendable {
    public static let defaultLimit = 100
    public static let maximumLimit = 1000

    public var limit: Int = defaultLimit
    package var after: PageKey?

    public init(limit: Int = defaultLimit) {
        self.limit = limit
        self.after = nil
    }

    package init(limit: Int, after: PageKey?) {
        self.limit = limit
        self.after = after
    }

    /// From a request's query; a bad limit or cursor is a 400 (`invalidLimit`, `invalidCursor`).
    package init(limit: String?, cursor: String?) throws {
        if let limit {
            guard let value = Int(limit), (1...Self.maximumLimit).contains(value) else {
                throw PageRefusal(.invalidLimit, "limit is a number from 1 to \(Self.maximumLimit)")
            }
            self.limit = value
        }
        if let cursor, !cursor.isEmpty {
            guard let key = PageKey(cursor: cursor) else {
                throw PageRefusal(.invalidCursor, "cursor is not a nextCursor this list gave")
            }
            after = key
        }
    }
}
