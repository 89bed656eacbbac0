#!/usr/bin/env python3
"""Apple's official App Store Server Library (Python) drives the simulator through one scenario and reports.

Reads a JSON document on standard input (written by ServerAPIBehaviourJudgeTests) whose "scenario" names what to
do; the simulator's Server API is called only through Apple's AppStoreServerAPIClient and every JWS is decoded
with Apple's SignedDataVerifier (the simulator's root trusted). Admin actions in the middle of a scenario (a
refund while paging) go to the simulator's admin API. Prints a JSON summary that the Swift test checks; exits 1
with {"error": …} when Apple's library refuses something.

Scenarios:
  history        page through Get Transaction History ascending and descending while transactions are
                 refunded, call again with the last revision, and filter with revoked=True / revoked=False;
  notifications  Get Notification History for one customer (transactionId) and with onlyFailures;
  signed_data    decode a free subscription's transaction, and the statuses (renewal info and latest
                 transaction) of the given subscriptions.
"""
import base64
import json
import sys

import requests

from appstoreserverlibrary.api_client import AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


class Judge:
    def __init__(self, spec):
        self.spec = spec
        environment = Environment(spec["environment"])
        root = base64.b64decode(spec["rootDER"])
        self.verifier = SignedDataVerifier([root], False, environment, spec["bundleId"], spec.get("appAppleId"))
        api = spec["api"]
        self.client = AppStoreServerAPIClient(api["privateKey"].encode(), api["keyId"], api["issuerId"],
                                              spec["bundleId"], environment)
        self.client._base_url = api["baseURL"]  # the simulator instead of api.storekit-sandbox.apple.com
        self.admin = spec.get("adminURL")
        self.summary = {}  # filled as the scenario goes, so that a refusal still shows what came before it

    def transaction(self, jws):
        decoded = self.verifier.verify_and_decode_signed_transaction(jws)
        return {"transactionId": decoded.transactionId, "originalTransactionId": decoded.originalTransactionId,
                "productId": decoded.productId, "type": decoded.rawType, "purchaseDate": decoded.purchaseDate,
                "expiresDate": decoded.expiresDate, "revocationDate": decoded.revocationDate}

    def refund(self, transaction_id):
        answer = requests.post(f"{self.admin}/transactions/{transaction_id}/refund", json={"reason": 0}, timeout=30)
        answer.raise_for_status()

    # MARK: history

    def history_page(self, any_id, revision, request):
        response = self.client.get_transaction_history(any_id, revision, request, GetTransactionHistoryVersion.V2)
        items = [self.transaction(jws) for jws in response.signedTransactions]
        return response, [{"id": item["transactionId"], "revoked": item["revocationDate"] is not None}
                          for item in items]

    def page_through(self, order, all_ids, refunded):
        """Pages through the whole history in `order`; after the first page, refunds one transaction already
        seen and one not yet seen. Then refunds another seen one and calls again with the last revision."""
        any_id = self.spec["anyTransactionId"]
        request = TransactionHistoryRequest(sort=order)
        response, page = self.history_page(any_id, None, request)
        pages = [page]
        seen = [item["id"] for item in page]
        seen_then_refunded = next(i for i in seen if i not in refunded)
        unseen_then_refunded = next(i for i in all_ids if i not in seen and i not in refunded)
        for transaction_id in (seen_then_refunded, unseen_then_refunded):
            self.refund(transaction_id)
            refunded.add(transaction_id)
        while response.hasMore:
            response, page = self.history_page(any_id, response.revision, request)
            pages.append(page)
        refunded_after = next(i for i in seen if i not in refunded)
        self.refund(refunded_after)
        refunded.add(refunded_after)
        later, later_page = self.history_page(any_id, response.revision, request)
        return {"pages": pages, "seenThenRefunded": seen_then_refunded, "unseenThenRefunded": unseen_then_refunded,
                "refundedAfterTheLastPage": refunded_after, "afterTheLastPage": later_page,
                "afterTheLastPageHasMore": later.hasMore}

    def history(self):
        all_ids = self.spec["transactionIds"]
        refunded = set()
        summary = self.summary
        summary["ascending"] = self.page_through(Order.ASCENDING, all_ids, refunded)
        summary["descending"] = self.page_through(Order.DESCENDING, all_ids, refunded)
        summary["refunded"] = sorted(refunded)
        any_id = self.spec["anyTransactionId"]
        # Apple's Python client sends booleans as Python writes them: revoked=True, revoked=False.
        for name, value in (("revokedTrue", True), ("revokedFalse", False)):
            ids, revision = [], None
            while True:
                response, page = self.history_page(any_id, revision, TransactionHistoryRequest(revoked=value))
                ids += [item["id"] for item in page]
                revision = response.revision
                if not response.hasMore:
                    break
            summary[name] = ids

    # MARK: notifications

    def notification_history(self, request):
        items, token = [], None
        while True:
            response = self.client.get_notification_history(token, request)
            for item in response.notificationHistory:
                payload = self.verifier.verify_and_decode_notification(item.signedPayload)
                entry = {"type": payload.rawNotificationType, "subtype": payload.rawSubtype,
                         "sendAttempts": len(item.sendAttempts or [])}
                if payload.data is not None and payload.data.signedTransactionInfo is not None:
                    transaction = self.transaction(payload.data.signedTransactionInfo)
                    entry["transactionId"] = transaction["transactionId"]
                    entry["originalTransactionId"] = transaction["originalTransactionId"]
                items.append(entry)
            token = response.paginationToken
            if not response.hasMore:
                return items

    def notifications(self):
        now = self.spec["nowMs"]
        # The test moves the clock days ahead after the notifications were sent.
        window = {"startDate": now - 7 * 86_400_000, "endDate": now + 60_000}
        self.summary["customer"] = self.notification_history(
            NotificationHistoryRequest(transactionId=self.spec["customerTransactionId"], **window))
        self.summary["onlyFailures"] = self.notification_history(
            NotificationHistoryRequest(onlyFailures=True, **window))

    # MARK: signed data

    def signed_data(self):
        summary = self.summary
        summary["transactions"] = [self.transaction(jws) for jws in self.spec.get("transactions", [])]
        summary["subscriptions"] = {}
        for original in self.spec.get("subscriptions", []):
            statuses = self.client.get_all_subscription_statuses(original)
            for group in statuses.data:
                for item in group.lastTransactions:
                    if item.originalTransactionId != original:
                        continue
                    renewal = self.verifier.verify_and_decode_renewal_info(item.signedRenewalInfo)
                    summary["subscriptions"][original] = {
                        "status": item.rawStatus,
                        "transaction": self.transaction(item.signedTransactionInfo),
                        "renewalInfo": {"expirationIntent": renewal.rawExpirationIntent,
                                        "autoRenewStatus": renewal.rawAutoRenewStatus,
                                        "isInBillingRetryPeriod": renewal.isInBillingRetryPeriod,
                                        "gracePeriodExpiresDate": renewal.gracePeriodExpiresDate,
                                        "renewalDate": renewal.renewalDate},
                    }


def main() -> int:
    spec = json.load(sys.stdin)
    judge = Judge(spec)
    scenarios = {"history": judge.history, "notifications": judge.notifications, "signed_data": judge.signed_data}
    try:
        scenarios[spec["scenario"]]()
    except Exception as error:  # the judge's verdict: refused
        judge.summary["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(judge.summary))
    return 1 if "error" in judge.summary else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # refused before the scenario started
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)
