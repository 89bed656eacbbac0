import Hummingbird
import TillCatalogue
import TillContract
import TillHTTPKit
import TillLedger

// The customers' AppTransactions (app API): each customer's app sends StoreKit 2's AppTransaction once, and the app or
// its backend reads it back. See docs/api.md, `PUT /v1/customers/{id}/app-transaction`.

func addAppTransactionRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("customers/{customer}/app-transaction") { _, context in
        let app = try context.requireApp()
        return try json(
            try await server.appTransactions.appTransaction(
                bundleId: app.bundleId,
                customerId: try context.customerParameter()
            ),
            context: context
        )
    }
    group.put("customers/{customer}/app-transaction") { request, context in
        let app = try context.requireApp()
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.AppTransactionInput.self, request, context)
        return try json(
            try await server.appTransactions.record(input.signedAppTransaction, customerId: customerId, app: app),
            context: context
        )
    }
}
