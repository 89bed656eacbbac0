#!/usr/bin/env python3
"""Apple's SignedDataVerifier, configured for the Xcode environment, reads the simulator's StoreKit Testing data.

Reads {"bundleId", "transactions": [JWS], "renewalInfos": [JWS], "appTransactions": [JWS]} on standard input and
prints what Apple's library decoded. Apple's verifier checks no signature for Xcode data (it is signed on the
developer's machine): it checks the environment and the bundle id, which is what this judges.
"""
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

summary = {}


def main() -> int:
    spec = json.load(sys.stdin)
    verifier = SignedDataVerifier([], False, Environment.XCODE, spec["bundleId"], None)
    summary["transactions"] = [
        {"transactionId": t.transactionId, "environment": t.rawEnvironment, "productId": t.productId}
        for t in (verifier.verify_and_decode_signed_transaction(jws) for jws in spec["transactions"])]
    summary["renewalInfos"] = [verifier.verify_and_decode_renewal_info(jws).rawEnvironment
                               for jws in spec["renewalInfos"]]
    summary["appTransactions"] = [verifier.verify_and_decode_app_transaction(jws).rawReceiptType
                                  for jws in spec["appTransactions"]]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # the judge's verdict: refused
        print(json.dumps({**summary, "error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)
