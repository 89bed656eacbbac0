import SwiftUI
import TillClient

/// The custom product list: the server's master list with the store's localized prices, bought through Till.
struct ShopView: View {
    @Environment(TillModel.self) private var till

    var body: some View {
        NavigationStack {
            List {
                Section("Your account") {
                    Text(gemsText)
                    if till.isActive("pro") {
                        Text("Pro is unlocked")
                    }
                    if till.state.isStale {
                        Text("Offline for too long: connect to see what you have")
                    }
                }
                Section("Shop") {
                    ForEach(till.products, id: \.productId) { product in
                        ProductRow(product: product)
                    }
                }
                Section("Premium") {
                    NavigationLink("Plans") {
                        PremiumView()
                    }
                }
                Section {
                    Button("Restore Purchases") {
                        Task { await till.restore() }
                    }
                }
            }
            .navigationTitle("Till Shop")
        }
    }

    private var gemsText: String { "\(till.balance(of: "gems")) gems" }
}

/// One product: its name and description, and a button with its price.
struct ProductRow: View {
    @Environment(TillModel.self) private var till
    let product: OfferedProduct

    var body: some View {
        HStack {
            VStack(alignment: .leading) {
                Text(product.store.displayName)
                Text(product.store.description)
            }
            Spacer()
            if till.state.owns(productId: product.productId) {
                Text("Owned")
            } else {
                Button(product.store.displayPrice) {
                    Task { await till.purchase(product.productId) }
                }
                .disabled(till.state.purchaseInProgress != nil)
            }
        }
    }
}
