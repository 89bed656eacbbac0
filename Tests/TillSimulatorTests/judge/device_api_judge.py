"""Judges the simulator's device API against its OpenAPI document (Client/Sources/TillSimulatorContract/openapi.yaml).

Reads JSON on standard input: {"document": path, "exchanges": [{"method", "path", "status", "body"}]}, where `path`
is the documented path template the request was made to (relative to the server URL `/storekit/{environment}`) and
`body` the answer's JSON (null when it has none). Checks, with openapi-spec-validator and jsonschema (independent of
Till's Swift code):

- the document is valid OpenAPI 3.1;
- every answer's status is documented for its operation, and its body matches the documented schema strictly: an
  object may carry only the properties the document names (every object schema is closed for the check);
- every documented operation was exercised with a successful answer.

Prints {"errors": [...], "unexercised": [...], "checked": n} and exits 1 when anything is wrong.
"""

import copy
import json
import sys

import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry
from referencing.jsonschema import DRAFT202012


def closed(schema):
    """The schema with every object schema that names its properties closed to others."""
    if isinstance(schema, dict):
        schema = {key: closed(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    return schema


def main():
    spec = json.load(sys.stdin)
    with open(spec["document"], encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    errors = []
    try:
        validate(document)
    except Exception as error:  # the validator's own error types vary by version
        errors.append(f"the document is not valid OpenAPI: {error}")

    strict = closed(copy.deepcopy(document))
    registry = Registry().with_resource("urn:device-api", DRAFT202012.create_resource(strict))
    exercised = set()
    checked = 0
    for exchange in spec["exchanges"]:
        method, path, status = exchange["method"].lower(), exchange["path"], str(exchange["status"])
        operation = document.get("paths", {}).get(path, {}).get(method)
        where = f"{method.upper()} {path} {status}"
        if operation is None:
            errors.append(f"{where}: not a documented operation")
            continue
        if status.startswith("2"):
            exercised.add((method, path))
        response = operation.get("responses", {}).get(status)
        if response is None:
            errors.append(f"{where}: the status is not documented")
            continue
        pointer = f"#/paths/{escape(path)}/{method}/responses/{status}"
        if "$ref" in response:
            pointer = response["$ref"]
            response = document["components"]["responses"][pointer.split("/")[-1]]
        content = response.get("content", {}).get("application/json")
        body = exchange.get("body")
        if content is None:
            if body not in (None, ""):
                errors.append(f"{where}: a body the document does not describe")
            continue
        validator = Draft202012Validator(
            {"$ref": "urn:device-api" + pointer + "/content/application~1json/schema"}, registry=registry
        )
        problems = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        for problem in problems[:5]:
            location = "/".join(str(part) for part in problem.absolute_path)
            errors.append(f"{where}: at /{location}: {problem.message[:300]}")
        checked += 1

    unexercised = [
        f"{method.upper()} {path}"
        for path, operations in document.get("paths", {}).items()
        for method in operations
        if method in ("get", "put", "post", "delete", "patch") and (method, path) not in exercised
    ]
    print(json.dumps({"errors": errors, "unexercised": unexercised, "checked": checked}))
    sys.exit(1 if errors or unexercised else 0)


def escape(path):
    """A JSON pointer's token for a path."""
    return path.replace("~", "~0").replace("/", "~1")


if __name__ == "__main__":
    main()
