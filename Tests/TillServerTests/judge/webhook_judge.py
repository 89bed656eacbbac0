#!/usr/bin/env python3
"""The independent judge of Till's webhooks: every delivery checked with the Standard Webhooks library
(`standardwebhooks` on PyPI, the specification's own) and its body against the contract's schema (openapi.yaml's
`WebhookPayload`, JSON Schema 2020-12 as OpenAPI 3.1 has it).

Input (JSON on standard input):
  {"openapi": "path/to/openapi.yaml",
   "deliveries": [{"secrets": ["whsec_…", …], "headers": {"webhook-id": …, …}, "body": "<base64>",
                   "receivedAt": <UNIX seconds>}, …]}
Each delivery must verify with one of its secrets (the receiver's current one; during a rotation the old one too);
the signature's timestamp is checked against the time the delivery arrived, as a receiver checks it then.

Output (JSON): {"verified": n, "types": [...], "errors": [...], "bySecret": {...}}; the exit status is 0 when every
delivery verified and matched the schema.
"""
import base64
import datetime as real_datetime
import json
import sys

import standardwebhooks.webhooks as sw
import yaml
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


def schema_validator(openapi_path):
    with open(openapi_path) as f:
        document = yaml.safe_load(f)
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:till:openapi", resource)
    schema = {"$ref": "urn:till:openapi#/components/schemas/WebhookPayload"}
    return Draft202012Validator(schema, registry=registry, format_checker=FormatChecker()), document


class FrozenClock(real_datetime.datetime):
    """datetime whose now() is the moment a delivery arrived."""
    frozen = None

    @classmethod
    def now(cls, tz=None):
        return cls.frozen


def main():
    spec = json.load(sys.stdin)
    validator, document = schema_validator(spec["openapi"])
    known_types = set(document["components"]["schemas"]["EventType"]["enum"])
    sw.datetime = FrozenClock
    verified = 0
    types = []
    errors = []
    by_secret = {}
    for index, delivery in enumerate(spec["deliveries"]):
        body = base64.b64decode(delivery["body"])
        FrozenClock.frozen = real_datetime.datetime.fromtimestamp(delivery["receivedAt"], tz=real_datetime.timezone.utc)
        payload = None
        for secret in delivery["secrets"]:
            try:
                payload = sw.Webhook(secret).verify(body, delivery["headers"])
                by_secret[secret[:12]] = by_secret.get(secret[:12], 0) + 1
                break
            except sw.WebhookVerificationError:
                continue
        if payload is None:
            errors.append(f"delivery {index} ({delivery['headers'].get('webhook-id')}): no signature verifies")
            continue
        problems = [e.message for e in validator.iter_errors(payload)]
        if problems:
            errors.append(f"delivery {index}: the body is not a WebhookPayload: {problems[:3]}")
            continue
        if payload["type"] != payload["data"]["type"] or payload["type"] not in known_types:
            errors.append(f"delivery {index}: type {payload['type']} / {payload['data']['type']}")
            continue
        if delivery["headers"]["webhook-id"] != payload["data"]["id"]:
            errors.append(f"delivery {index}: webhook-id is not the event's id")
            continue
        verified += 1
        types.append(payload["type"])
    print(json.dumps({"verified": verified, "types": sorted(set(types)), "errors": errors, "bySecret": by_secret}))
    sys.exit(0 if not errors else 1)


if __name__ == "__main__":
    main()
