/// A customer of an app: the key the event log gathers a change's customers by, and the customer view is cached by.
package struct CustomerKey: Hashable, Sendable {
    package var bundleId: String
    package var customerId: String

    package init(
        bundleId: String,
        customerId: String
    ) {
        self.bundleId = bundleId
        self.customerId = customerId
    }
}
