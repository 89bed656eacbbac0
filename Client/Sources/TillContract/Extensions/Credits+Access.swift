// Hand-written conveniences on generated types: behaviour only, never a field (fields come from openapi.yaml).

extension Components.Schemas.Credits {
    /// The credits as a dictionary, `credit → amount`.
    public init(_ amounts: [String: Int64]) { self.init(additionalProperties: amounts) }

    /// The amount of `credit`, nil when the customer has none of it.
    public subscript(credit: String) -> Int64? {
        get { additionalProperties[credit] }
        set { additionalProperties[credit] = newValue }
    }
}

extension Components.Schemas.Credits: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Int64)...) {
        self.init(additionalProperties: Dictionary(elements, uniquingKeysWith: { $1 }))
    }
}
