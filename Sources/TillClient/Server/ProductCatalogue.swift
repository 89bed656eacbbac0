import TillCore

/// The server's master list of products (`GET /v1/products`): what to look up in the store, and what each
/// product gives. New products and files appear here without an app update.
public struct ProductCatalogue: Sendable, Hashable, Codable {
    /// Send it back with ``TillServerClient/products(ifNoneMatch:)``: an unchanged list answers not modified.
    public var etag: String
    public var products: [CatalogueProduct]

    public init(etag: String, products: [CatalogueProduct]) {
        self.etag = etag
        self.products = products
    }

    public var productIds: [String] { products.map(\.productId) }

    public func product(_ productId: String) -> CatalogueProduct? {
        products.first { $0.productId == productId }
    }
}

/// One product of the master list.
public struct CatalogueProduct: Sendable, Hashable, Codable {
    public var productId: String
    /// Kept as the server sent it; ``productType`` is the typed view.
    public var type: String
    public var title: String
    /// What a purchase grants while it is active.
    public var entitlements: [String]
    /// What one unit of a consumable credits.
    public var credits: [String: Int64]
    /// The files the server delivers with the product.
    public var content: [CatalogueFile]
    public var subscriptionGroup: String?

    public init(
        productId: String,
        type: String,
        title: String,
        entitlements: [String] = [],
        credits: [String: Int64] = [:],
        content: [CatalogueFile] = [],
        subscriptionGroup: String? = nil
    ) {
        self.productId = productId
        self.type = type
        self.title = title
        self.entitlements = entitlements
        self.credits = credits
        self.content = content
        self.subscriptionGroup = subscriptionGroup
    }

    public var productType: ProductType? { ProductType(rawValue: type) }

    /// Whether the server delivers files with it: they are downloaded before its transaction is finished.
    public var isServerDelivered: Bool { !content.isEmpty }
}

/// A file of a product, as the master list and download links describe it.
public struct CatalogueFile: Sendable, Hashable, Codable {
    /// What the device saves it as.
    public var name: String
    /// 64 lowercase hex digits; the download's ETag.
    public var sha256: String
    public var size: Int64
    public var contentType: String

    public init(name: String, sha256: String, size: Int64, contentType: String) {
        self.name = name
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
    }
}

/// The answer to a conditional master-list request.
public enum CatalogueFetch: Sendable, Hashable {
    case updated(ProductCatalogue)
    /// The ETag sent still matches: the list the app has is current.
    case notModified
}
