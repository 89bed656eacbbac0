import TillContract
import TillCore

/// The server's master list of products (`GET /v1/products`, generated from the contract): what to look up in the
/// store, and what each product gives. New products and files appear here without an app update. Send its `etag`
/// back with ``TillServerClient/products(ifNoneMatch:)``: an unchanged list answers not modified.
public typealias ProductCatalogue = Components.Schemas.MasterList
/// One product of the master list.
public typealias CatalogueProduct = Components.Schemas.MasterListProduct
/// A file of a product, as the master list and download links describe it.
public typealias CatalogueFile = Components.Schemas.ContentFile

extension Components.Schemas.MasterList {
    public var productIds: [String] { products.map(\.productId) }

    public func product(_ productId: String) -> CatalogueProduct? {
        products.first { $0.productId == productId }
    }
}

extension Components.Schemas.MasterListProduct {
    /// The product's type, as TillCore names the five kinds.
    public var productType: ProductType? { ProductType(rawValue: _type.rawValue) }

    /// Whether the server delivers files with it: they are downloaded before its transaction is finished.
    public var isServerDelivered: Bool { !content.isEmpty }
}

/// The answer to a conditional master-list request.
public enum CatalogueFetch: Sendable, Hashable {
    case updated(ProductCatalogue)
    /// The ETag sent still matches: the list the app has is current.
    case notModified
}
