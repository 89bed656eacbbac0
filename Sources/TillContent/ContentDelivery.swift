import Foundation
import HTTPTypes
import Logging
import NIOCore
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// An upload stored: the file as the product now lists it, and whether its name was new to the product.
public struct ContentUpload: Sendable, Hashable {
    public var file: ContentFile
    public var created: Bool
}

/// What content delivery needs of the customers' room: a customer as the ledger stands (what it may download), and
/// where the downloads it issues are noted in the customer's timeline. The server's `Customers` is it.
package protocol ContentCustomers: Sendable {
    func customer(bundleId: String, customerId: String) async throws -> CustomerView
    /// Notes what was done for a customer in its timeline (`downloadsIssued`).
    func note(_ activity: CustomerActivity) async throws
}

/// Content delivery: the files products deliver, stored by hash (`ContentBlobs`), listed in the catalogue, and
/// handed out through signed, expiring URLs (`DownloadSigner`) only to customers entitled to them now
/// (`ContentAccess`).
public struct ContentDelivery: Sendable {
    let settings: ContentSettings
    /// Where the files' bytes are kept, by hash.
    let directory: String
    /// Signs download URLs (the server's secret).
    let secret: [UInt8]
    let database: TillDatabase
    /// The product catalogues.
    var catalogueStore: CatalogueStore { CatalogueStore(database: database) }
    let catalogue: Catalogue
    let customers: any ContentCustomers
    let clock: ServerClock
    let logger: Logger

    package var blobs: ContentBlobs { ContentBlobs(directory: directory) }
    var downloadSigner: DownloadSigner { DownloadSigner(secret: secret) }

    package init(
        settings: ContentSettings,
        directory: String,
        secret: [UInt8],
        database: TillDatabase,
        catalogue: Catalogue,
        customers: any ContentCustomers,
        clock: ServerClock,
        logger: Logger
    ) {
        self.settings = settings
        self.directory = directory
        self.secret = secret
        self.database = database
        self.catalogue = catalogue
        self.customers = customers
        self.clock = clock
        self.logger = logger
    }

    /// Adds a file to a product, or replaces the one of the same name; the master list (and its ETag) changes.
    ///
    /// The product is checked before the body is read, so a wrong path costs no upload. `declaredLength` (the
    /// request's Content-Length) refuses an oversized upload at once; the limit is enforced on the bytes received
    /// too, for uploads that declare nothing or lie.
    public func putContent<Body: AsyncSequence>(
        bundleId: String,
        productId: String,
        name: String,
        contentType: String?,
        declaredLength: Int64?,
        body: Body
    ) async throws -> ContentUpload where Body.Element == ByteBuffer {
        defer { catalogue.changed() }
        try Self.validateContentName(name)
        let contentType = try Self.validateContentType(contentType)
        let limit = settings.maxUploadBytes
        _ = try await productForContent(bundleId: bundleId, productId: productId, on: database.sql)
        if let declaredLength, declaredLength > limit {
            throw ContentRefusal(.bodyTooLarge, "a content file has at most \(limit) bytes")
        }
        let received = try await blobs.receive(body, limit: limit)
        let file = ContentFile(name: name, sha256: received.sha256, size: received.size, contentType: contentType)
        let now = clock.milliseconds
        let replaced: ContentFile?
        do {
            replaced = try await database.transaction { db in
                var product = try await self.productForContent(bundleId: bundleId, productId: productId, on: db)
                let index = product.content.firstIndex { $0.name == name }
                let previous = index.map { product.content[$0] }
                if let index { product.content[index] = file } else { product.content.append(file) }
                product.updatedAt = now
                try await self.catalogueStore.save(product, on: db)
                return previous
            }
        } catch {
            await blobs.discard(received)
            throw error
        }
        try await blobs.place(received)
        if let replaced, replaced.sha256 != file.sha256 { await collectBlob(replaced.sha256) }
        return ContentUpload(file: file, created: replaced == nil)
    }

    /// Takes a file off a product; its bytes are deleted once no product of any app lists them.
    public func deleteContent(bundleId: String, productId: String, name: String) async throws {
        defer { catalogue.changed() }
        let now = clock.milliseconds
        let removed = try await database.transaction { db -> ContentFile in
            var product = try await self.product(bundleId: bundleId, productId: productId, on: db)
            guard let index = product.content.firstIndex(where: { $0.name == name }) else {
                throw ContentRefusal(.contentNotFound, "no content \(name)")
            }
            let removed = product.content.remove(at: index)
            product.updatedAt = now
            try await self.catalogueStore.save(product, on: db)
            return removed
        }
        await collectBlob(removed.sha256)
    }

    /// A product's files, in upload order.
    public func content(bundleId: String, productId: String) async throws -> [ContentFile] {
        let product = try await product(bundleId: bundleId, productId: productId, on: database.sql)
        return product.content
    }

    /// Signed download URLs for a product's files (one file when `name` is given), if the customer may have them.
    public func downloads(bundleId: String, customerId: String, productId: String, name: String?) async throws
        -> [ContentDownload]
    {
        let product = try await product(bundleId: bundleId, productId: productId, on: database.sql)
        var files = product.content
        if let name {
            files = files.filter { $0.name == name }
            guard !files.isEmpty else { throw ContentRefusal(.contentNotFound, "no content \(name)") }
        }
        let customer = try await customers.customer(bundleId: bundleId, customerId: customerId)
        if case .refused(let reason) = ContentAccess.decide(product, for: customer) {
            throw ContentRefusal(.notEntitled, reason)
        }
        let lifetime = max(1, settings.urlLifetime.components.seconds)
        let expires = Int64(clock.now().timeIntervalSince1970.rounded(.down)) + lifetime
        let signer = downloadSigner
        try await customers.note(
            CustomerActivity(
                bundleId: bundleId,
                customerId: customer.customerId,
                at: clock.milliseconds,
                kind: .downloadsIssued,
                detail: "\(productId): " + files.map(\.name).joined(separator: ", ")
            )
        )
        return files.map { file in
            let link = DownloadLink(
                bundleId: bundleId,
                sha256: file.sha256,
                customerId: customerId,
                name: file.name,
                expires: expires
            )
            return ContentDownload(
                name: file.name,
                sha256: file.sha256,
                size: file.size,
                contentType: file.contentType,
                url: signer.url(for: link),
                expiresAt: expires * 1000
            )
        }
    }

    /// Checks a download URL (signature, expiry) and that its customer may still have the file (a refund since
    /// the URL was made revokes it); answers the file to serve.
    public func authorizeDownload(
        bundleId: String,
        sha256: String,
        name: String?,
        customerId: String?,
        expires: String?,
        signature: String?
    ) async throws -> ContentFile {
        let verdict = downloadSigner.check(
            bundleId: bundleId,
            sha256: sha256,
            name: name,
            customerId: customerId,
            expires: expires,
            signature: signature,
            now: clock.now()
        )
        let link: DownloadLink
        switch verdict {
        case .valid(let valid):
            link = valid
        case .invalid(.badSignature):
            throw ContentRefusal(
                .invalidSignature,
                "this download URL was not signed by this server; ask for a new one"
            )
        case .invalid(.expired):
            throw ContentRefusal(.urlExpired, "this download URL has expired; ask for a new one")
        }
        let listing = try await catalogueStore.products(bundleId: bundleId, on: database.sql).filter { product in
            product.content.contains { $0.sha256 == link.sha256 && $0.name == link.name }
        }
        guard let file = listing.first?.content.first(where: { $0.sha256 == link.sha256 && $0.name == link.name })
        else { throw ContentRefusal(.contentNotFound, "no content \(link.name)") }
        let customer = try await customers.customer(bundleId: bundleId, customerId: link.customerId)
        guard listing.contains(where: { ContentAccess.decide($0, for: customer) == .granted }) else {
            throw ContentRefusal(
                .notEntitled,
                "customer \(link.customerId) may no longer download \(link.name)"
            )
        }
        return file
    }

    /// Deletes a blob no product lists any more. A failure only leaves a file behind, so it is logged, not thrown:
    /// the change to the catalogue has been made.
    private func collectBlob(_ sha256: String) async {
        do {
            try await blobs.collect(sha256) {
                try await !self.catalogueStore.products(referencingContent: sha256, on: self.database.sql).isEmpty
            }
        } catch {
            logger.warning("content file \(sha256) could not be deleted: \(error)")
        }
    }

    /// The app's product, or why there is none: the app is unknown (the catalogue's `appNotFound`), or it has no such
    /// product.
    private func product(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> CatalogProduct {
        guard let product = try await catalogue.product(bundleId: bundleId, productId: productId, on: db) else {
            throw ContentRefusal(.productNotFound, "no product \(productId) in \(bundleId)")
        }
        return product
    }

    private func productForContent(bundleId: String, productId: String, on db: any SQLDatabase) async throws
        -> CatalogProduct
    {
        let product = try await product(bundleId: bundleId, productId: productId, on: db)
        guard product.type != .consumable else {
            throw ContentRefusal(
                .consumableContent,
                "\(productId) is a consumable: consumables deliver no content"
            )
        }
        return product
    }

    /// A name is what the customer's device saves the file as: one path component, printable, and safe inside a
    /// quoted `Content-Disposition` filename.
    static func validateContentName(_ name: String) throws {
        let printable = name.unicodeScalars.allSatisfy {
            $0.properties.generalCategory != .control && $0 != "\"" && $0 != "\\"
        }
        guard (1...200).contains(name.unicodeScalars.count), !name.contains("/"), !name.contains(".."), name != ".",
            printable
        else {
            throw ContentRefusal(
                .invalidName,
                "a content name has 1 to 200 printable characters, without /, \\, \" or .."
            )
        }
    }

    /// The upload's Content-Type, `application/octet-stream` when it sent none.
    static func validateContentType(_ header: String?) throws -> String {
        guard let header, !header.isEmpty else { return "application/octet-stream" }
        let visible = header.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F }
        guard header.count <= 200, header.contains("/"), visible else {
            throw ContentRefusal(.invalidContentType, "Content-Type is a media type such as application/pdf")
        }
        return header
    }
}
