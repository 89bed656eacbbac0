#!/usr/bin/env python3
"""An independent judge of the simulator: Apple's official App Store Server Library (Python, from PyPI).

Reads a JSON document on standard input (written by PythonJudgeTests), checks with Apple's SignedDataVerifier
that every JWS verifies with the simulator's root trusted, and with Apple's AppStoreServerAPIClient that
every Server API response of the simulator decodes. Prints a JSON summary; exits 1 on the first refusal.
"""
import base64
import json
import sys

from appstoreserverlibrary.api_client import AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.TransactionHistoryRequest import TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def main() -> int:
    spec = json.load(sys.stdin)
    root = base64.b64decode(spec["rootDER"])
    environment = Environment(spec["environment"])
    verifier = SignedDataVerifier([root], False, environment, spec["bundleId"], spec.get("appAppleId"))
    summary = {"transactions": [], "renewalInfos": [], "notifications": [], "appTransactions": [], "api": {}}

    for jws in spec["transactions"]:
        decoded = verifier.verify_and_decode_signed_transaction(jws)
        summary["transactions"].append({"transactionId": decoded.transactionId, "productId": decoded.productId,
                                        "type": decoded.rawType, "environment": decoded.rawEnvironment})
    for jws in spec["renewalInfos"]:
        decoded = verifier.verify_and_decode_renewal_info(jws)
        summary["renewalInfos"].append({"originalTransactionId": decoded.originalTransactionId,
                                        "autoRenewProductId": decoded.autoRenewProductId})
    for jws in spec["notifications"]:
        decoded = verifier.verify_and_decode_notification(jws)
        summary["notifications"].append({"notificationType": decoded.rawNotificationType, "subtype": decoded.rawSubtype})
    for jws in spec["appTransactions"]:
        decoded = verifier.verify_and_decode_app_transaction(jws)
        summary["appTransactions"].append({"bundleId": decoded.bundleId})

    api = spec["api"]
    client = AppStoreServerAPIClient(api["privateKey"].encode(), api["keyId"], api["issuerId"], spec["bundleId"], environment)
    client._base_url = api["baseURL"]  # the simulator instead of api.storekit-sandbox.apple.com

    info = client.get_transaction_info(api["transactionId"])
    summary["api"]["transactionInfo"] = verifier.verify_and_decode_signed_transaction(info.signedTransactionInfo).transactionId
    history = client.get_transaction_history(api["transactionId"], None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2)
    summary["api"]["history"] = {"count": len(history.signedTransactions), "hasMore": history.hasMore,
                                 "environment": history.rawEnvironment, "appAppleId": history.appAppleId}
    # revoked, the one boolean query parameter, as Apple's Python client writes it: revoked=True / revoked=False.
    for name, value in (("revokedTrue", True), ("revokedFalse", False)):
        filtered = client.get_transaction_history(api["transactionId"], None, TransactionHistoryRequest(revoked=value),
                                                  GetTransactionHistoryVersion.V2)
        summary["api"][name] = len(filtered.signedTransactions)
    statuses = client.get_all_subscription_statuses(api["originalTransactionId"])
    summary["api"]["statuses"] = [
        {"group": group.subscriptionGroupIdentifier, "status": [item.rawStatus for item in group.lastTransactions]}
        for group in statuses.data
    ]
    order = client.look_up_order_id(api["orderId"])
    summary["api"]["order"] = {"status": order.rawStatus, "count": len(order.signedTransactions)}
    refunds = client.get_refund_history(api["transactionId"], None)
    summary["api"]["refunds"] = len(refunds.signedTransactions)
    test = client.request_test_notification()
    summary["api"]["testNotificationToken"] = bool(test.testNotificationToken)
    status = client.get_test_notification_status(test.testNotificationToken)
    summary["api"]["testNotificationType"] = verifier.verify_and_decode_notification(status.signedPayload).rawNotificationType
    now = api["nowMs"]
    notifications = client.get_notification_history(None, NotificationHistoryRequest(startDate=now - 86_400_000, endDate=now + 60_000))
    summary["api"]["notificationHistory"] = len(notifications.notificationHistory)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # the judge's verdict: refused
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)
