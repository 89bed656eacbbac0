import Testing
import TillFormats

struct NotificationTypeTests {
    @Test func subtypesFollowApplesTable() {
        #expect(NotificationType.subscribed.accepts(subtype: .initialBuy))
        #expect(NotificationType.subscribed.accepts(subtype: .resubscribe))
        #expect(!NotificationType.subscribed.accepts(subtype: nil))
        #expect(!NotificationType.subscribed.accepts(subtype: .upgrade))
        #expect(NotificationType.didChangeRenewalPref.accepts(subtype: nil))
        #expect(
            NotificationType.expired.knownSubtypes == [.voluntary, .billingRetry, .priceIncrease, .productNotForSale]
        )
        #expect(NotificationType.refund.knownSubtypes.isEmpty)
        #expect(NotificationType.refund.accepts(subtype: nil))
        #expect(!NotificationType.refund.accepts(subtype: .summary))
        #expect(!NotificationType.renewalExtension.accepts(subtype: nil))
        #expect(NotificationType.renewalExtension.accepts(subtype: .failure))
    }

    @Test func unknownTypesAndSubtypesAreAccepted() {
        #expect(NotificationType(rawValue: "NEW_TYPE").accepts(subtype: .summary))
        #expect(NotificationType(rawValue: "NEW_TYPE").accepts(subtype: nil))
        #expect(NotificationType.didRenew.accepts(subtype: NotificationSubtype(rawValue: "NEW_SUBTYPE")))
    }

    @Test func knownListsAreComplete() {
        #expect(NotificationType.known.count == 23)
        #expect(Set(NotificationType.known).count == 23)
        #expect(NotificationSubtype.known.count == 19)
        let usedSubtypes = Set(NotificationType.known.flatMap(\.knownSubtypes))
        #expect(usedSubtypes == Set(NotificationSubtype.known))
    }

    @Test func deliveryAcknowledgement() {
        #expect(NotificationDelivery.isAcknowledged(httpStatus: 200))
        #expect(NotificationDelivery.isAcknowledged(httpStatus: 206))
        #expect(!NotificationDelivery.isAcknowledged(httpStatus: 207))
        #expect(!NotificationDelivery.isAcknowledged(httpStatus: 500))
        #expect(NotificationDelivery.productionRetryDelays.map { $0.components.seconds / 3600 } == [1, 12, 24, 48, 72])
    }
}
