#!/usr/bin/env python3
"""Apple's own signature creators against the simulator's offers.

Reads a JSON document on standard input (written by OfferSignatureJudgeTests). Signs promotional offers with
Apple's PromotionalOfferSignatureCreator (the original ECDSA signature) and PromotionalOfferV2SignatureCreator (the
compact JWS), and introductory-offer eligibility with IntroductoryOfferEligibilitySignatureCreator, exactly as a
developer's server would, buys with them through the simulator's StoreKit API, and decodes every signed
transaction and renewal info with Apple's SignedDataVerifier. Tampered and replayed signatures must be refused.
Prints a JSON summary; exits 1 with {"error": …} on the first refusal by Apple's library.
"""
import base64
import json
import sys
import time
import uuid

import requests

from appstoreserverlibrary.jws_signature_creator import (IntroductoryOfferEligibilitySignatureCreator,
                                                         PromotionalOfferV2SignatureCreator)
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

summary = {}


def main() -> int:
    spec = json.load(sys.stdin)
    verifier = SignedDataVerifier([base64.b64decode(spec["rootDER"])], False, Environment(spec["environment"]),
                                  spec["bundleId"], spec.get("appAppleId"))
    key, key_id, issuer, bundle = spec["privateKey"].encode(), spec["keyId"], spec["issuerId"], spec["bundleId"]
    store = spec["storeKitURL"]
    v1 = PromotionalOfferSignatureCreator(key, key_id, bundle)
    v2 = PromotionalOfferV2SignatureCreator(key, key_id, issuer, bundle)
    eligibility = IntroductoryOfferEligibilitySignatureCreator(key, key_id, issuer, bundle)

    def pay(device, product, **extra):
        body = {"deviceId": device, "bundleId": bundle, "productId": product, **extra}
        return requests.post(f"{store}/payments", json=body, timeout=30).json()

    def offer_of(answer):
        if answer.get("state") != "purchased":
            return {"state": answer.get("state"), "error": (answer.get("error") or {}).get("code")}
        tx = verifier.verify_and_decode_signed_transaction(answer["signedTransaction"])
        return {"state": "purchased", "transactionId": tx.transactionId, "offerType": tx.rawOfferType,
                "offerIdentifier": tx.offerIdentifier, "offerDiscountType": tx.rawOfferDiscountType,
                "offerPeriod": tx.offerPeriod, "price": tx.price}

    def renewal(device, original):
        signed = requests.get(f"{store}/devices/{device}/subscriptions/{original}/renewal-info", timeout=30).json()
        info = verifier.verify_and_decode_renewal_info(signed["signedRenewalInfo"])
        return {"offerType": info.rawOfferType, "offerIdentifier": info.offerIdentifier,
                "offerDiscountType": info.rawOfferDiscountType, "renewalPrice": info.renewalPrice}

    first, second = spec["firstDevice"], spec["secondDevice"]
    app_transaction = requests.get(f"{store}/devices/{first}/app-transaction", params={"bundleId": bundle},
                                   timeout=30).json()
    app_transaction_id = verifier.verify_and_decode_app_transaction(app_transaction["signedAppTransaction"]).appTransactionId

    # A new customer is eligible for the free trial; the developer's signed word takes it away.
    blocked = pay(first, "premium.monthly", introductoryOfferEligibility=eligibility.create_signature(
        "premium.monthly", False, app_transaction_id))
    summary["introductoryBlocked"] = offer_of(blocked)
    summary["introductoryAutomatic"] = offer_of(pay(second, "premium.monthly"))

    # The original signature: an upgrade with a promotional offer starts now, with the offer.
    token = str(uuid.uuid4())
    nonce = uuid.uuid4()
    timestamp = int(time.time() * 1000)
    signature = v1.create_signature("premium.plus.monthly", "winter", token, nonce, timestamp)
    original = {"offerIdentifier": "winter", "keyIdentifier": key_id, "nonce": str(nonce), "timestamp": timestamp,
                "signature": signature}
    summary["promotionalV1"] = offer_of(pay(first, "premium.plus.monthly", appAccountToken=token,
                                            promotionalOffer=original))
    summary["promotionalV1Replayed"] = offer_of(pay(first, "premium.plus.monthly", appAccountToken=token,
                                                    promotionalOffer=original))
    tampered_nonce = uuid.uuid4()
    good = v1.create_signature("premium.plus.monthly", "winter", token, tampered_nonce, timestamp)
    raw = bytearray(base64.b64decode(good))
    raw[-1] ^= 0x01
    summary["promotionalV1Tampered"] = offer_of(pay(first, "premium.plus.monthly", appAccountToken=token,
                                                    promotionalOffer={**original, "nonce": str(tampered_nonce),
                                                                      "signature": base64.b64encode(bytes(raw)).decode()}))
    summary["promotionalV1OtherToken"] = offer_of(pay(first, "premium.plus.monthly", appAccountToken=str(uuid.uuid4()),
                                                      promotionalOffer={**original, "nonce": str(tampered_nonce),
                                                                        "signature": good}))

    # The JWS: redeemed during a paid period of the same plan, it waits for the next renewal (renewal info).
    plus = summary["promotionalV1"]["transactionId"]
    jws = v2.create_signature("premium.plus.monthly", "winter", plus)
    redeemed = pay(first, "premium.plus.monthly", promotionalOffer={"offerIdentifier": "winter", "compactJWS": jws})
    summary["promotionalV2"] = {"state": redeemed.get("state")}
    summary["renewalAfterV2"] = renewal(first, redeemed["originalTransactionId"])
    header, payload, sig = jws.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged["nonce"] = str(uuid.uuid4())  # a replay dressed up as new: the signature no longer matches
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    summary["promotionalV2Forged"] = offer_of(pay(first, "premium.plus.monthly", promotionalOffer={
        "offerIdentifier": "winter", "compactJWS": f"{header}.{forged_payload}.{sig}"}))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # the judge's verdict: refused
        print(json.dumps({**summary, "error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)
