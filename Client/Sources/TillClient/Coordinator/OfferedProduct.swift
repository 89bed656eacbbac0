import TillContract

/// A product the app can offer: the server's description with the store's localized price.
public struct OfferedProduct: Sendable, Hashable {
    public var catalogue: CatalogueProduct
    public var store: StoreProduct
    public var productId: String { catalogue.productId }
}

/// The products to show, and the master-list ids the store does not sell here.
public struct OfferedProducts: Sendable, Hashable {
    public var products: [OfferedProduct]
    public var invalidProductIds: [String]
}
