#!/usr/bin/env python3
"""Every public call of Apple's official App Store Server API client, against the simulator.

Reads a JSON document on standard input (written by ServerAPICompletenessJudgeTests). Introspects Apple's
AppStoreServerAPIClient for its public methods, calls each of them against the simulator with real data, decodes
every JWS the simulator signs with Apple's SignedDataVerifier (the simulator's root trusted), and checks what each
call did. A small HTTP server in this process is the developer's Retention Messaging realtime URL: it verifies each
signed realtime request with Apple's verifier and answers with a message. Prints a JSON summary; exits 1 with
{"error": …} on the first refusal, or when a public method of the client was not exercised.
"""
import base64
import inspect
import json
import struct
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.AccountTenure import AccountTenure
from appstoreserverlibrary.models.BulletPoint import BulletPoint
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.ConsumptionRequestV1 import ConsumptionRequestV1
from appstoreserverlibrary.models.ConsumptionStatus import ConsumptionStatus
from appstoreserverlibrary.models.DefaultConfigurationRequest import DefaultConfigurationRequest
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.DeliveryStatusV1 import DeliveryStatusV1
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.ExtendReasonCode import ExtendReasonCode
from appstoreserverlibrary.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserverlibrary.models.ImageSize import ImageSize
from appstoreserverlibrary.models.LifetimeDollarsPurchased import LifetimeDollarsPurchased
from appstoreserverlibrary.models.LifetimeDollarsRefunded import LifetimeDollarsRefunded
from appstoreserverlibrary.models.MassExtendRenewalDateRequest import MassExtendRenewalDateRequest
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.PerformanceTestRequest import PerformanceTestRequest
from appstoreserverlibrary.models.Platform import Platform
from appstoreserverlibrary.models.PlayTime import PlayTime
from appstoreserverlibrary.models.RealtimeUrlRequest import RealtimeUrlRequest
from appstoreserverlibrary.models.RefundPreference import RefundPreference
from appstoreserverlibrary.models.TransactionHistoryRequest import TransactionHistoryRequest
from appstoreserverlibrary.models.UpdateAppAccountTokenRequest import UpdateAppAccountTokenRequest
from appstoreserverlibrary.models.UploadMessageImage import UploadMessageImage
from appstoreserverlibrary.models.UploadMessageRequestBody import UploadMessageRequestBody
from appstoreserverlibrary.models.UserStatus import UserStatus
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def png(width, height):
    """An opaque greyscale PNG of the given size (what Retention Messaging takes: no transparency)."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


class Recorder:
    """Wraps the client and remembers which public methods were called."""
    def __init__(self, client):
        self._client = client
        self.called = set()

    def __getattr__(self, name):
        attribute = getattr(self._client, name)
        if callable(attribute) and not name.startswith("_"):
            self.called.add(name)
        return attribute


class Realtime:
    """The developer's Get Retention Message endpoint: verifies each request with Apple's verifier."""
    def __init__(self, verifier, message_id):
        self.verifier = verifier
        self.message_id = message_id
        self.verified = 0
        self.refused = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                try:
                    decoded = judge.verifier.verify_and_decode_realtime_request(body["signedPayload"])
                    assert decoded.originalTransactionId and decoded.requestIdentifier and decoded.userLocale
                    judge.verified += 1
                    answer = json.dumps({"message": {"messageIdentifier": judge.message_id}}).encode()
                    self.send_response(200)
                except Exception as error:  # refused: the simulator signed something Apple's library rejects
                    judge.refused.append(f"{type(error).__name__}: {error}")
                    answer = b"{}"
                    self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/retention"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def api_error(call):
    """The errorCode of an APIException raised by call (None when it succeeds)."""
    try:
        call()
    except APIException as error:
        return error.raw_api_error if error.raw_api_error is not None else -error.http_status_code
    return None


def wait_for(condition, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError("the simulator did not finish in time")


summary = {}  # filled as the calls go, so that a refusal still shows what came before it


def main() -> int:
    spec = json.load(sys.stdin)
    environment = Environment(spec["environment"])
    verifier = SignedDataVerifier([base64.b64decode(spec["rootDER"])], False, environment, spec["bundleId"],
                                  spec.get("appAppleId"))
    api = spec["api"]
    inner = AppStoreServerAPIClient(api["privateKey"].encode(), api["keyId"], api["issuerId"], spec["bundleId"],
                                    environment)
    inner._base_url = api["baseURL"]  # the simulator instead of api.storekit-sandbox.apple.com
    client = Recorder(inner)
    subscription, consumable, order = api["subscription"], api["consumable"], api["orderId"]

    def tx(jws):
        return verifier.verify_and_decode_signed_transaction(jws)

    # Reads.
    summary["transactionInfo"] = tx(client.get_transaction_info(subscription).signedTransactionInfo).transactionId
    statuses = client.get_all_subscription_statuses(subscription)
    latest = statuses.data[0].lastTransactions[0]
    expires_before = tx(latest.signedTransactionInfo).expiresDate
    verifier.verify_and_decode_renewal_info(latest.signedRenewalInfo)
    summary["order"] = client.look_up_order_id(order).rawStatus
    summary["refunds"] = len(client.get_refund_history(subscription, None).signedTransactions)
    app_transaction = verifier.verify_and_decode_app_transaction(
        client.get_app_transaction_info(subscription).signedAppTransactionInfo)
    summary["appTransactionId"] = app_transaction.appTransactionId
    summary["historyByAppTransactionId"] = len(client.get_transaction_history(
        app_transaction.appTransactionId, None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2
    ).signedTransactions)

    # History v1 (the client's default) leaves out a consumable once it is finished; v2 keeps it.
    def history(version):
        response = client.get_transaction_history(subscription, None, TransactionHistoryRequest(), version)
        return sorted(tx(jws).transactionId for jws in response.signedTransactions)
    summary["historyV1BeforeFinish"] = history(GetTransactionHistoryVersion.V1)
    client.finish_transaction(consumable)
    summary["historyV1AfterFinish"] = history(GetTransactionHistoryVersion.V1)
    summary["historyV2AfterFinish"] = history(GetTransactionHistoryVersion.V2)

    # Consumption information, both versions, and one refusal of each.
    client.send_consumption_data(consumable, ConsumptionRequestV1(
        customerConsented=True, consumptionStatus=ConsumptionStatus.PARTIALLY_CONSUMED, platform=Platform.APPLE,
        sampleContentProvided=False, deliveryStatus=DeliveryStatusV1.DELIVERED_AND_WORKING_PROPERLY,
        appAccountToken="", accountTenure=AccountTenure.TEN_DAYS_TO_THIRTY_DAYS, playTime=PlayTime.FIVE_TO_SIXTY_MINUTES,
        lifetimeDollarsRefunded=LifetimeDollarsRefunded.ZERO_DOLLARS,
        lifetimeDollarsPurchased=LifetimeDollarsPurchased.ONE_CENT_TO_FORTY_NINE_DOLLARS_AND_NINETY_NINE_CENTS,
        userStatus=UserStatus.ACTIVE))
    client.send_consumption_information(consumable, ConsumptionRequest(
        customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
        consumptionPercentage=25000, refundPreference=RefundPreference.GRANT_PRORATED))
    summary["consumptionWithoutConsent"] = api_error(lambda: client.send_consumption_information(
        consumable, ConsumptionRequest(customerConsented=False, sampleContentProvided=False,
                                       deliveryStatus=DeliveryStatus.DELIVERED)))
    summary["percentageForSubscription"] = api_error(lambda: client.send_consumption_information(
        subscription, ConsumptionRequest(customerConsented=True, sampleContentProvided=False,
                                         deliveryStatus=DeliveryStatus.DELIVERED, consumptionPercentage=1000)))

    # App account token: set on the subscription's current period.
    token = str(uuid.uuid4())
    client.set_app_account_token(subscription, UpdateAppAccountTokenRequest(appAccountToken=token))
    current = client.get_all_subscription_statuses(subscription).data[0].lastTransactions[0]
    summary["tokenSet"] = tx(current.signedTransactionInfo).appAccountToken == token
    summary["tokenNotOriginal"] = api_error(lambda: client.set_app_account_token(
        api["renewal"], UpdateAppAccountTokenRequest(appAccountToken=token))) if api.get("renewal") else None

    # Renewal-date extensions: one subscription, then every active subscriber of the product.
    extended = client.extend_subscription_renewal_date(subscription, ExtendRenewalDateRequest(
        extendByDays=3, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION, requestIdentifier=str(uuid.uuid4())))
    summary["extension"] = {"success": extended.success, "moved": extended.effectiveDate > expires_before}
    summary["extensionTooLong"] = api_error(lambda: client.extend_subscription_renewal_date(
        subscription, ExtendRenewalDateRequest(extendByDays=91, extendReasonCode=ExtendReasonCode.OTHER,
                                               requestIdentifier=str(uuid.uuid4()))))
    mass_id = str(uuid.uuid4())
    mass = client.extend_renewal_date_for_all_active_subscribers(MassExtendRenewalDateRequest(
        extendByDays=1, extendReasonCode=ExtendReasonCode.SERVICE_ISSUE_OR_OUTAGE, requestIdentifier=mass_id,
        productId=api["subscriptionProduct"]))
    status = wait_for(lambda: (lambda s: s if s.complete else None)(
        client.get_status_of_subscription_renewal_date_extensions(mass.requestIdentifier, api["subscriptionProduct"])))
    summary["massExtension"] = {"succeeded": status.succeededCount, "failed": status.failedCount}

    # Notifications: a test, and the history, every payload verified (RENEWAL_EXTENDED, RENEWAL_EXTENSION/SUMMARY).
    test_token = client.request_test_notification().testNotificationToken
    test = client.get_test_notification_status(test_token)
    summary["testNotification"] = verifier.verify_and_decode_notification(test.signedPayload).rawNotificationType
    now = api["nowMs"]
    def notification_types():
        page = client.get_notification_history(None, NotificationHistoryRequest(
            startDate=now - 86_400_000, endDate=int(time.time() * 1000) + 86_400_000 * 400))
        decoded = [verifier.verify_and_decode_notification(item.signedPayload) for item in page.notificationHistory]
        return [[n.rawNotificationType, n.rawSubtype, n.summary.succeededCount if n.summary else None]
                for n in decoded]
    summary["notifications"] = wait_for(lambda: (lambda types: types if any(
        t[1] == "SUMMARY" for t in types) else None)(notification_types()))

    # Retention Messaging: images, a message, the default message, the realtime URL, a performance test.
    full, bullet, message = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    client.upload_image(uuid.UUID(full), png(3840, 160))
    client.upload_image(uuid.UUID(bullet), png(1024, 1024), ImageSize.BULLET_POINT)
    summary["wrongImageSize"] = api_error(lambda: client.upload_image(uuid.uuid4(), png(100, 100)))
    summary["images"] = sorted((str(i.imageIdentifier), i.rawImageState, i.rawImageSize)
                               for i in client.get_image_list().imageIdentifiers)
    client.upload_message(uuid.UUID(message), UploadMessageRequestBody(
        header="Before you go", body="Your plan keeps every feature you use.",
        image=UploadMessageImage(imageIdentifier=uuid.UUID(full), altText="A chart of your progress"),
        bulletPoints=[BulletPoint(text="Unlimited projects", imageIdentifier=uuid.UUID(bullet), altText="A check")]))
    summary["messages"] = [(str(m.messageIdentifier), m.rawMessageState) for m in client.get_message_list().messageIdentifiers]
    client.configure_default_message(api["subscriptionProduct"], "en-US",
                                     DefaultConfigurationRequest(messageIdentifier=uuid.UUID(message)))
    summary["defaultMessage"] = str(client.get_default_message(api["subscriptionProduct"], "en-US").messageIdentifier)
    realtime = Realtime(verifier, message)
    client.configure_realtime_url(RealtimeUrlRequest(realtimeURL=realtime.url))
    summary["realtimeURL"] = client.get_realtime_url().realtimeURL == realtime.url
    shown = requests.post(f"{spec['storeKitURL']}/devices/{spec['deviceId']}/subscriptions/{subscription}/retention-message",
                          json={"locale": "en-US"}, timeout=30).json()
    summary["shown"] = {"source": shown.get("source"), "message": shown.get("messageIdentifier"),
                        "header": shown.get("header")}
    test_run = client.initiate_performance_test(PerformanceTestRequest(originalTransactionId=subscription))
    result = wait_for(lambda: (lambda r: r if r.rawResult != "PENDING" else None)(
        client.get_performance_test_results(test_run.requestId)), seconds=60)
    summary["performanceTest"] = {"result": result.rawResult, "successRate": result.successRate,
                                  "target": result.target == realtime.url, "total": test_run.config.totalRequests}
    summary["realtime"] = {"verified": realtime.verified, "refused": realtime.refused}
    summary["imageInUse"] = api_error(lambda: client.delete_image(uuid.UUID(full)))
    client.delete_default_message(api["subscriptionProduct"], "en-US")
    summary["defaultAfterDelete"] = api_error(lambda: client.get_default_message(api["subscriptionProduct"], "en-US"))
    client.delete_realtime_url()
    summary["realtimeAfterDelete"] = api_error(lambda: client.get_realtime_url())
    client.delete_message(uuid.UUID(message))
    client.delete_image(uuid.UUID(full))
    client.delete_image(uuid.UUID(bullet))
    summary["imagesLeft"] = len(client.get_image_list().imageIdentifiers)
    realtime.server.shutdown()

    public = sorted(name for name, _ in inspect.getmembers(AppStoreServerAPIClient, inspect.isfunction)
                    if not name.startswith("_"))
    summary["publicMethods"] = public
    summary["notCalled"] = sorted(set(public) - client.called)
    print(json.dumps(summary))
    return 0 if not summary["notCalled"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # the judge's verdict: refused
        detail = f"{type(error).__name__}: {error}"
        if isinstance(error, APIException):
            detail += f" (HTTP {error.http_status_code}, errorCode {error.raw_api_error}: {error.error_message})"
        print(json.dumps({**summary, "error": detail}))
        sys.exit(1)
