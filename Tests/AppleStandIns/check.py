#!/usr/bin/env python3
"""Checks TillClient's Apple-only files, and the example app, on Linux.

The files of TillClient that import StoreKit, SwiftUI, Combine or Network are compiled for real only on Apple
platforms. This check compiles them here against the declaration-only stand-ins beside this file (Apple's API as
its documentation gives it, with availability), and then asks four questions; any "no" fails it:

1. Does TillClient compile with those files switched on? Everything the compiler diagnoses counts, through SIL (the
   concurrency checker's data-race errors are found there, not by the type checker): `swiftc -emit-sil`.
2. Does the example app (Examples/TillShop.swiftpm) compile against that TillClient and the stand-ins? And the
   Swift examples of the docs: each ```swift block of README.md and docs/*.md is found line for line in
   DocExamples/ beside this file (with the declarations the reader supplies around it), which compiles the same way.
3. Does each stand-in declaration have a use? A declaration is used when the code (TillClient, the example) refers
   to it, names its type, matches its enum case, or when a used declaration needs it: a type in its signature, a
   requirement of a used protocol, the member by which a used type conforms to a protocol, a default argument's
   value (the docs' examples count as code). A declaration nothing needs fails the check; a symbol the code uses and the stand-in lacks fails step 1
   or 2. So the stand-ins and the code cannot drift apart.
4. Is every API TillClient and the modules it imports in its package (TillCore, TillContract, TillSimulatorContract,
   TillSnapshot) refer to available at the package's floors (iOS 15, macOS 12, tvOS 15, watchOS 8, visionOS 1),
   or used only where an `@available` declaration or an `if #available`/`guard #available` makes it so? The
   availability is what the symbol graphs of the modules say: the stand-ins, and on Linux the Swift standard library,
   Concurrency, Observation, swift-foundation's new API and the dependencies; swift-corelibs-foundation's older
   classes carry none.

Steps 1 and 2 run once per Apple SDK TillClient compiles with (SDKS below: from the oldest Xcode the docs name to
the newest). The stand-ins follow the newest SDK, and what an older SDK lacks sits inside `#if compiler(>=…)` with the
Swift version of the first Xcode whose SDK has it; for each SDK the stand-ins and the code are compiled with those
conditions evaluated as that Xcode's compiler would (copies under the scratch folder), so a call that needs a newer
SDK than its `#if` says fails here as it would in that Xcode. A `compiler(>=…)` above the newest SDK's fails the check.

5. Does any public top-level name of the client package's modules name a type of an Apple module the stand-ins stand
   for? An app imports both, and could not write the name. The stand-ins declare, beside what the code uses, the names
   Apple's modules share with each other or with TillClient (apple-kept.txt, pinned to Apple's USRs), so a bare
   `Transaction` in a file that imports StoreKit and SwiftUI is ambiguous here as it is with Apple's SDK.

It writes a report (the Apple API used, with availability) and exits 1 on any failure. It runs inside `swift test`
(AppleSourcesTests) against the build `swift test` made, reusing its compile flags from
.build/debug.yaml, and takes seconds.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

FLOORS = {"iOS": (15, 0), "macOS": (12, 0), "tvOS": (15, 0), "watchOS": (8, 0), "visionOS": (1, 0)}
STAND_INS = ["StoreKit", "SwiftUI", "_StoreKit_SwiftUI", "Combine", "Network"]
CLIENT_MODULES = ["TillCore", "TillSnapshot", "TillContract", "TillSimulatorContract", "TillClient"]
SYSTEM_MODULES = ["Swift", "_Concurrency", "Synchronization", "Foundation", "FoundationEssentials", "FoundationInternationalization",
                  "FoundationNetworking", "Dispatch", "Observation"]
DEPENDENCY_MODULES = ["Crypto", "HTTPTypes", "OpenAPIRuntime", "OpenAPIURLSession"]
# The Apple SDKs TillClient compiles with, oldest first, each with the Swift version of the first Xcode that ships it.
# The last is the one the stand-ins follow whole; docs/client.md names the oldest ("Xcode 16.0 or later").
SDKS = [("the iOS 18.0 SDK (Xcode 16.0)", (6, 0)), ("the iOS 18.4 SDK (Xcode 16.3)", (6, 1)),
        ("the iOS 26 SDK (Xcode 26)", (6, 2))]
COMPILER_CONDITION = re.compile(r"compiler\(\s*>=\s*(\d+(?:\.\d+)*)\s*\)")
TYPE_KINDS = ("swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.typealias")


class Failure(Exception):
    pass


def run(command, cwd=None):
    process = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return process.returncode, process.stdout, process.stderr


# MARK: The build's compile flags


def target_arguments(yaml_text, target, triple):
    """The swiftc arguments SwiftPM compiles `target` with, minus what makes object files and build products."""
    key = f'"C.{target}-{triple}-debug.module":'
    start = yaml_text.find(key)
    if start < 0:
        raise Failure(f"no compile command for {target} in the build description: run `swift build --build-tests`")
    match = re.search(r"\n    args: (\[.*?\])\n", yaml_text[start:])
    arguments = json.loads(match.group(1))[1:]
    with_value = {"-emit-module-path", "-output-file-map", "-index-store-path", "-emit-objc-header-path",
                  "-module-cache-path"}
    alone = {"-emit-dependencies", "-emit-module", "-incremental", "-c", "-enable-batch-mode",
             "-serialize-diagnostics", "-parseable-output", "-emit-objc-header", "-enable-testing"}
    kept, index = [], 0
    while index < len(arguments):
        argument = arguments[index]
        if argument in with_value:
            index += 2
            continue
        if argument in alone or re.fullmatch(r"-j\d+", argument):
            index += 1
            continue
        kept.append(argument)
        index += 1
    return kept


def clang_arguments(arguments):
    kept = []
    for index, argument in enumerate(arguments):
        if argument == "-Xcc":
            kept += [argument, arguments[index + 1]]
    return kept


def sources_of(arguments):
    for argument in arguments:
        if argument.startswith("@"):
            return [line.strip() for line in open(argument[1:]) if line.strip()]
    return [argument for argument in arguments if argument.endswith(".swift")]


# MARK: The SDKs


def as_compiled_by(text, swift):
    """`text` with each `compiler(>=X)` of its `#if`/`#elseif` lines replaced by what Swift `swift` answers."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if re.match(r"\s*#(if|elseif)\b", line):
            lines[index] = COMPILER_CONDITION.sub(
                lambda match: "true" if parse_version(match.group(1)) <= swift else "false", line)
    return "\n".join(lines)


def conditions_above_newest(paths):
    """`path:line` of each `compiler(>=X)` condition above the newest SDK's Swift: no SDK here says what it means."""
    newest, found = SDKS[-1][1], []
    for path in paths:
        for number, line in enumerate(open(path, errors="replace").read().split("\n"), 1):
            if re.match(r"\s*#(if|elseif)\b", line):
                for match in COMPILER_CONDITION.finditer(line):
                    if parse_version(match.group(1)) > newest:
                        found.append(f"{os.path.relpath(path)}:{number}: {match.group(0)}")
    return found


def with_sources(arguments, sources, folder):
    """`arguments` compiling `sources` instead of their own (a response file of theirs is written anew in `folder`)."""
    result = []
    for argument in arguments:
        if argument.startswith("@"):
            response = os.path.join(folder, "sources.txt")
            with open(response, "w") as file:
                file.write("\n".join(sources) + "\n")
            result.append("@" + response)
        elif not argument.endswith(".swift"):
            result.append(argument)
    if not any(argument.startswith("@") for argument in arguments):
        result += sources
    return result


def for_sdk(context, sdk):
    """A context whose stand-ins and sources are as `sdk`'s Xcode compiles them: copies, conditions evaluated."""
    name, swift = sdk
    folder = os.path.join(context.work, "sdk-%d.%d" % swift)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)

    def copy(path, into):
        relative = os.path.relpath(path, context.package if into == "sources" else context.stand_in_dir)
        if relative.startswith(".."):
            relative = os.path.join("elsewhere", os.path.basename(path))
        target = os.path.join(folder, into, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as file:
            file.write(as_compiled_by(open(path).read(), swift))
        return target

    stand_ins = os.path.join(folder, "stand-ins")
    for root, _, files in os.walk(context.stand_in_dir):
        if os.path.relpath(root, context.stand_in_dir).startswith("DocExamples"):
            continue
        for file in files:
            if file.endswith((".swiftinterface", ".swiftoverlay")):
                copy(os.path.join(root, file), "stand-ins")
    variant = Context()
    variant.__dict__.update(context.__dict__)
    variant.sdk = name
    variant.stand_in_dir = stand_ins
    variant.modules = os.path.join(folder, "modules")
    os.makedirs(variant.modules)
    variant.stand_in_flags = ["-module-cache-path", os.path.join(folder, "ModuleCache"), "-I", stand_ins,
                              "-Xfrontend", "-enable-cross-import-overlays"]
    sources = [copy(path, "sources") if os.path.isabs(path) else path
               for path in sources_of(context.client_arguments)]
    variant.client_arguments = with_sources(context.client_arguments, sources, folder)
    variant.example_sources = [copy(path, "sources") for path in context.example_sources]
    variant.doc_example_sources = [copy(path, "sources") for path in context.doc_example_sources]
    return variant


# MARK: Compiling


def compile_client(context):
    """Step 1: TillClient with its Apple files on, through SIL; its module (for the example) and its AST."""
    arguments = context.client_arguments
    # The SIL goes to a file of this check's: the compiler replaces its output by renaming a temporary file over
    # it, which would turn /dev/null into a plain file.
    command = (["swiftc", "-emit-sil", "-wmo", "-o", os.path.join(context.modules, "TillClient.sil"),
                "-emit-module", "-emit-module-path", os.path.join(context.modules, "TillClient.swiftmodule")]
               + arguments + context.stand_in_flags)
    status, _, errors = run(command)
    diagnostics = [line for line in errors.splitlines() if re.search(r": (error|warning): ", line)]
    if status != 0 or diagnostics:
        raise Failure(f"TillClient does not compile against the stand-ins of {context.sdk}:\n" + errors)


def compile_against_client(context, module, sources, what):
    """Code that uses TillClient (an app, the docs' examples), compiled against it and the stand-ins, through SIL."""
    command = (["swiftc", "-emit-sil", "-wmo", "-o", os.path.join(context.modules, module + ".sil"),
                "-parse-as-library", "-module-name", module,
                "-swift-version", "6", "-I", context.modules, "-I", context.build_modules]
               + sources + clang_arguments(context.client_arguments) + context.stand_in_flags)
    status, _, errors = run(command)
    diagnostics = [line for line in errors.splitlines() if re.search(r": (error|warning): ", line)]
    if status != 0 or diagnostics:
        raise Failure(f"{what}: failed to compile against TillClient and the stand-ins of {context.sdk}:\n" + errors)


def compile_example(context):
    """Step 2: the example app against that TillClient and the stand-ins."""
    compile_against_client(context, "TillShop", context.example_sources, "The example app")


# A block of the docs that is not Swift compiled against TillClient: a package manifest, or a manifest's lines, which
# ClientPackageTests and ClientReleaseTests build in an app's package.
def is_manifest(lines):
    code = [line for line in lines if line.strip() and not line.strip().startswith("//")]
    return bool(code) and (code[0].lstrip().startswith(".package(") or code[0].strip() == "import PackageDescription")


def doc_blocks(package):
    """Every ```swift block of README.md and docs/*.md: (file, line of the block, its lines)."""
    files = [os.path.join(package, "README.md")]
    docs = os.path.join(package, "docs")
    files += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    blocks = []
    for path in files:
        lines = open(path).read().splitlines()
        index = 0
        while index < len(lines):
            if lines[index].strip() == "```swift":
                end = index + 1
                while end < len(lines) and lines[end].strip() != "```":
                    end += 1
                block = lines[index + 1:end]
                if not is_manifest(block):
                    blocks.append((os.path.relpath(path, package), index + 2, block))
                index = end
            index += 1
    return blocks


# A code span outside the code blocks (a table's cell, a sentence) is a Swift snippet when it calls something with a
# labelled argument: `Payment(productId: "pro")`, `purchase(options: [...])`. A signature named without values
# (`promotionalOffer(offerID:keyID:)`) is a name, not a snippet; a manifest's call (`.package(url:from:)`) is not
# TillClient's. A line marked `<!-- not Swift -->` is skipped.
INLINE_SNIPPET = re.compile(r"\(.*\w: ")
# A manifest's calls are Swift of PackageDescription, which the package tests build, not TillClient's.
MANIFEST_CALLS = (".package(", ".product(", ".target(", ".executableTarget(", ".upToNextMinor(", ".upToNextMajor(")


def inline_snippets(package):
    """Every Swift snippet in a code span of README.md and docs/*.md: (file, line, the snippet)."""
    files = [os.path.join(package, "README.md")]
    docs = os.path.join(package, "docs")
    files += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    snippets = []
    for path in files:
        in_block = False
        for number, line in enumerate(open(path).read().splitlines(), 1):
            if line.strip().startswith("```"):
                in_block = not in_block
                continue
            if in_block or "<!-- not Swift -->" in line:
                continue
            for span in re.findall(r"`([^`]+)`", line):
                if "(" in span and INLINE_SNIPPET.search(span) and not span.startswith(MANIFEST_CALLS):
                    snippets.append((os.path.relpath(path, package), number, span))
    return snippets


def contains_lines(haystack, needle):
    """Whether `needle`'s lines appear one after the other in `haystack`, each compared without its indentation."""
    hay = [line.strip() for line in haystack]
    wanted = [line.strip() for line in needle]
    return any(hay[start:start + len(wanted)] == wanted for start in range(len(hay) - len(wanted) + 1))


def find_doc_examples(context):
    """Step 2, the docs: each Swift example is in DocExamples/ (checked first: it takes no compiler)."""
    examples = [open(path).read().splitlines() for path in context.doc_example_sources]
    missing = [f"{path}:{line}" for path, line, block in doc_blocks(context.docs_root)
               if not any(contains_lines(example, block) for example in examples)]
    # A snippet in a code span is found within a line of DocExamples/, as it is written.
    missing += [f"{path}:{line}: `{span}`" for path, line, span in inline_snippets(context.docs_root)
                if not any(span in text for example in examples for text in example)]
    if missing:
        raise Failure("Swift examples of the docs not found line for line in " + os.path.relpath(
            context.doc_examples) + " (copy each there, with what it needs around it, so that it is compiled):\n  "
                      + "\n  ".join(missing))


def compile_doc_examples(context):
    """Step 2, the docs: DocExamples/ compiles against TillClient and the stand-ins, like the example app."""
    compile_against_client(context, "TillDocExamples", context.doc_example_sources,
                           "The docs' Swift examples (" + os.path.relpath(context.doc_examples) + ")")


def dump_ast(arguments, extra):
    """The type-checked AST of a module, one JSON document per file."""
    status, _, errors = run(["swiftc", "-dump-ast", "-dump-ast-format", "json"] + arguments + extra)
    if status != 0:
        raise Failure("swiftc -dump-ast failed:\n" + errors[-4000:])
    decoder, documents, index = json.JSONDecoder(), [], 0
    while True:
        start = errors.find('{"_kind":"source_file"', index)
        if start < 0:
            return documents
        document, index = decoder.raw_decode(errors, start)
        documents.append(document)


def client_ast(context, target):
    arguments = target_arguments(context.yaml, target, context.triple)
    flags = ["-module-cache-path", context.module_cache]
    if target == "TillClient":
        flags += context.stand_in_flags[2:]
    return dump_ast(arguments, flags)


def example_ast(context, module="TillShop", sources=None):
    arguments = (["-parse-as-library", "-module-name", module, "-swift-version", "6", "-I", context.modules,
                  "-I", context.build_modules] + (sources or context.example_sources)
                 + clang_arguments(context.client_arguments))
    return dump_ast(arguments, context.stand_in_flags)


# MARK: Step 5, the names an app sees twice


def top_level_types(folder):
    """Each top-level type name the modules' symbol graphs in `folder` declare, with the modules that declare it."""
    names = {}
    for file in os.listdir(folder):
        if "@" in file or not file.endswith(".symbols.json"):
            continue
        module = file.split(".symbols.json")[0]
        for symbol in json.load(open(os.path.join(folder, file)))["symbols"]:
            if len(symbol["pathComponents"]) == 1 and symbol["kind"]["identifier"] in TYPE_KINDS:
                names.setdefault(symbol["pathComponents"][0], set()).add(module)
    return names


def name_clashes(context):
    """The client package's public top-level type names that a stand-in's module declares too."""
    folder = os.path.join(context.work, "names")
    shutil.rmtree(folder, ignore_errors=True)
    apple, client = os.path.join(folder, "apple"), os.path.join(folder, "client")
    extract_symbols(context, STAND_INS, apple, ["-I", context.stand_in_dir])
    extract_symbols(context, CLIENT_MODULES, client,
                    ["-I", context.modules, "-I", context.build_modules, "-I", context.stand_in_dir]
                    + clang_arguments(context.client_arguments))
    apple_names, client_names = top_level_types(apple), top_level_types(client)
    return sorted(f"{'/'.join(sorted(client_names[name]))}.{name} has the name of "
                  f"{' and '.join(module + '.' + name for module in sorted(apple_names[name]))}"
                  for name in set(client_names) & set(apple_names))


# MARK: Symbol graphs


class Symbols:
    """Every symbol of some modules by USR, with its kind, path, availability, parent and signature's references."""

    def __init__(self):
        self.by_usr = {}
        self.types_by_name = {}
        self.parent = {}
        self.origin = {}
        self.requirements = {}
        self.conforms = {}
        self.module_of = {}

    def load(self, path):
        graph = json.load(open(path))
        module = os.path.basename(path).split("@")[0].split(".symbols.json")[0]
        for symbol in graph["symbols"]:
            usr = symbol["identifier"]["precise"]
            if "::SYNTHESIZED::" in usr:
                continue
            self.by_usr[usr] = symbol
            self.module_of[usr] = module
        for relation in graph["relationships"]:
            source, target, kind = relation["source"], relation["target"], relation["kind"]
            if "::SYNTHESIZED::" in source:
                continue
            if kind == "memberOf":
                self.parent[source] = target
                if "sourceOrigin" in relation:
                    self.origin[source] = relation["sourceOrigin"]["identifier"]
            elif kind in ("requirementOf", "optionalRequirementOf"):
                self.parent[source] = target
                self.requirements.setdefault(target, set()).add(source)
            elif kind == "defaultImplementationOf":
                self.origin[source] = target
            elif kind == "conformsTo":
                self.conforms.setdefault(source, set()).add(target)

    def index_types(self):
        for usr, requirement in self.origin.items():
            # A protocol extension's default implementation is a member of the protocol.
            if usr not in self.parent and requirement in self.parent:
                self.parent[usr] = self.parent[requirement]
        for usr, symbol in self.by_usr.items():
            if symbol["kind"]["identifier"] in ("swift.struct", "swift.class", "swift.enum", "swift.protocol",
                                                 "swift.typealias", "swift.associatedtype"):
                name = self.module_of[usr] + "." + ".".join(symbol["pathComponents"])
                self.types_by_name.setdefault(name, usr)

    def qualified(self, usr):
        symbol = self.by_usr[usr]
        return self.module_of[usr] + "." + ".".join(symbol["pathComponents"])

    def availability(self, usr):
        """Per platform: the version it needs, or "unavailable"; inherited from the types and extensions around."""
        needs, seen = {}, set()
        while usr in self.by_usr and usr not in seen:
            seen.add(usr)
            for entry in self.by_usr[usr].get("availability", []):
                domain = entry.get("domain")
                if domain == "*" and entry.get("isUnconditionallyUnavailable"):
                    return {platform: "unavailable" for platform in FLOORS}
                if domain not in FLOORS:
                    continue
                if entry.get("isUnconditionallyUnavailable"):
                    needs[domain] = "unavailable"
                elif "introduced" in entry and needs.get(domain) != "unavailable":
                    version = (entry["introduced"]["major"], entry["introduced"].get("minor", 0))
                    needs[domain] = max(needs.get(domain, (0, 0)), version)
            usr = self.parent.get(usr)
        if "visionOS" not in needs and "iOS" in needs:
            ios = needs["iOS"]
            needs["visionOS"] = ios if ios == "unavailable" else (max(ios[0] - 16, 1), 0)
        return needs


def extract_symbols(context, modules, directory, search):
    os.makedirs(directory, exist_ok=True)

    def extract(module):
        status, _, errors = run(["swift-symbolgraph-extract", "-module-name", module, "-target", context.triple,
                                 "-output-dir", directory, "-minimum-access-level", "public",
                                 "-module-cache-path", context.module_cache] + search)
        if status != 0:
            raise Failure(f"swift-symbolgraph-extract {module} failed:\n{errors[-3000:]}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(extract, modules))


# MARK: Reading the AST


def walk(node, visit, context=None):
    """Visits every dictionary of the AST depth-first; `visit` returns the context for the node's children."""
    stack = [(node, context)]
    while stack:
        item, inherited = stack.pop()
        if isinstance(item, dict):
            inner = visit(item, inherited)
            for value in reversed(list(item.values())):
                if isinstance(value, (dict, list)):
                    stack.append((value, inner))
        elif isinstance(item, list):
            for value in reversed(item):
                stack.append((value, inherited))


def references(documents):
    """What the code names: declaration USRs, mangled types, and enum cases matched in patterns."""
    usrs, types, cases = set(), set(), set()

    def visit(node, _):
        for key, value in node.items():
            if not isinstance(value, str):
                continue
            if value.startswith("s:") and key != "usr":
                usrs.add(value)
            elif value.startswith("$s"):
                types.add(value)
        if node.get("_kind") == "pattern_enum_element" and node.get("type", "").startswith("$s"):
            name = node.get("element", {}).get("base_name", {}).get("name")
            if name:
                cases.add((node["type"], name))
        return None

    for document in documents:
        walk(document, visit)
    return usrs, types, cases


def demangle(symbols):
    symbols = sorted(symbols)
    if not symbols:
        return {}
    process = subprocess.run(["swift-demangle"], input="\n".join(symbols) + "\n",
                             capture_output=True, text=True)
    lines = process.stdout.splitlines()
    return dict(zip(symbols, lines)) if len(lines) == len(symbols) else {}


def without_generic_arguments(text):
    result, depth = [], 0
    for character in text:
        if character == "<":
            depth += 1
        elif character == ">" and depth:
            depth -= 1
        elif not depth:
            result.append(character)
    return "".join(result)


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def names_in(texts):
    names = set()
    for text in texts:
        for form in (text, without_generic_arguments(text)):
            for name in NAME.findall(form):
                parts = name.split(".")
                for end in range(2, len(parts) + 1):
                    names.add(".".join(parts[:end]))
    return names


# MARK: Step 3, the drift


def default_argument_members(stand_in_dir):
    """(type, member) pairs the stand-ins use as default argument values: `alignment: T = .center`."""
    pairs = set()
    for name in os.listdir(stand_in_dir):
        if name.endswith(".swiftinterface"):
            text = open(os.path.join(stand_in_dir, name)).read()
            for type_name, member in re.findall(r":\s*([A-Za-z_][\w.]*)\??\s*=\s*\.([A-Za-z_]\w*)", text):
                pairs.add((type_name, member))
    return pairs


def drift(context, stand_ins, used_usrs, type_texts, cases):
    """The stand-in declarations nothing needs."""
    ours = {usr for usr in stand_ins.by_usr if stand_ins.module_of[usr] in STAND_INS}
    named = names_in(type_texts)
    used = {usr for usr in ours if usr in used_usrs}
    # What apple-kept.txt lists is declared for Apple's sake, not the code's (and pinned to Apple's USR).
    used |= {usr for _, usr in pinned(context, "apple-kept.txt") if usr in ours}
    used |= {usr for usr in ours if stand_ins.qualified(usr) in named
             and stand_ins.by_usr[usr]["kind"]["identifier"] not in ("swift.enum.case",)}
    case_names = {(without_generic_arguments(text), name) for text, name in cases}
    defaults = default_argument_members(context.stand_in_dir)
    for usr in ours:
        symbol = stand_ins.by_usr[usr]
        parent = stand_ins.parent.get(usr)
        base = symbol["pathComponents"][-1].split("(")[0]
        if symbol["kind"]["identifier"] == "swift.enum.case" and parent in stand_ins.by_usr:
            if (stand_ins.qualified(parent), base) in case_names:
                used.add(usr)
        if parent in stand_ins.by_usr:
            parent_name = stand_ins.qualified(parent)
            if any(parent_name.endswith("." + type_name.split(".")[-1]) and member == base
                   for type_name, member in defaults):
                used.add(usr)
    changed = True
    while changed:
        changed = False
        for usr in list(used):
            symbol = stand_ins.by_usr.get(usr)
            if symbol is None:
                continue
            needed = set()
            parent = stand_ins.parent.get(usr)
            if parent:
                needed.add(parent)
            for fragment in symbol.get("declarationFragments", []):
                if "preciseIdentifier" in fragment:
                    needed.add(fragment["preciseIdentifier"])
            for constraint in symbol.get("swiftGenerics", {}).get("constraints", []):
                if "rhsPrecise" in constraint:
                    needed.add(constraint["rhsPrecise"])
            for extension in symbol.get("swiftExtension", {}).get("constraints", []):
                if "rhsPrecise" in extension:
                    needed.add(extension["rhsPrecise"])
            needed |= stand_ins.requirements.get(usr, set())
            for protocol in stand_ins.conforms.get(usr, set()):
                needed.add(protocol)
            for new in needed:
                if new in ours and new not in used:
                    used.add(new)
                    changed = True
        for usr in ours - used:
            parent = stand_ins.parent.get(usr)
            # The member by which a used type conforms to a protocol (its own, or an extension's of a type the
            # stand-in does not declare, like `Never : View`), or a used protocol's default implementation.
            witness = usr in stand_ins.origin and (
                parent in used or (parent not in ours and stand_ins.origin[usr] in used))
            # A typealias a used protocol declares for its conforming types (`ViewModifier.Content`).
            alias = (stand_ins.by_usr[usr]["kind"]["identifier"] == "swift.typealias" and parent in used
                     and stand_ins.by_usr.get(parent, {}).get("kind", {}).get("identifier") == "swift.protocol")
            if witness or alias:
                used.add(usr)
                changed = True
    return sorted(stand_ins.qualified(usr) + "  (" + usr + ")" for usr in ours - used), used


def pinned_mismatches(context, stand_ins):
    """The names of apple-usrs.txt whose stand-in declaration has another USR than Apple's, or is missing."""
    by_name = {}
    for usr in stand_ins.by_usr:
        by_name.setdefault(stand_ins.qualified(usr), set()).add(usr)
    problems = []
    for name, usr in pinned(context, "apple-usrs.txt") + pinned(context, "apple-kept.txt"):
        if usr not in by_name.get(name, set()):
            problems.append(f"{name}: Apple's {usr}, the stand-in's {sorted(by_name.get(name, [])) or 'none'}")
    return problems


def pinned(context, file):
    """The (name, Apple's USR) lines of one of the stand-ins' lists."""
    pairs = []
    for line in open(os.path.join(context.stand_in_dir, file)):
        line = line.strip()
        if line and not line.startswith("#"):
            name, usr = line.split()
            pairs.append((name, usr))
    return pairs


# MARK: Step 4, availability


def version_text(version):
    return version if isinstance(version, str) else ".".join(str(part) for part in version)


def parse_version(text):
    parts = [int(part) for part in text.split(".")[:2]]
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def excluded_regions(path):
    """Byte ranges of a source file compiled only off one platform: `#else` of `#if os(X)`, `#if !os(X)`."""
    data = open(path, "rb").read()
    regions, stack, offset = [], [], 0
    for line in data.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(b"#if"):
            match = re.match(rb"#if\s+(!?)os\((\w+)\)\s*$", stripped)
            entry = {"platform": None, "negated": False, "start": offset + len(line), "else": None}
            if match:
                entry["platform"], entry["negated"] = match.group(2).decode(), bool(match.group(1))
            stack.append(entry)
        elif stripped.startswith(b"#else") and stack:
            stack[-1]["else"] = offset
        elif stripped.startswith(b"#endif") and stack:
            entry = stack.pop()
            if entry["platform"] in FLOORS:
                if entry["negated"]:
                    end = entry["else"] if entry["else"] is not None else offset
                    regions.append((entry["start"], end, entry["platform"]))
                elif entry["else"] is not None:
                    regions.append((entry["else"], offset, entry["platform"]))
        offset += len(line)
    return regions


def raised(context, versions):
    """`context` with the platforms of `versions` raised to them (an unavailable platform stays unavailable)."""
    result = dict(context)
    for platform, version in versions.items():
        if result[platform] != "unavailable":
            result[platform] = version if version == "unavailable" else max(result[platform], version)
    if "visionOS" not in versions and "iOS" in versions and versions["iOS"] != "unavailable":
        if result["visionOS"] != "unavailable":
            result["visionOS"] = max(result["visionOS"], (max(versions["iOS"][0] - 16, 1), 0))
    return result


def declared_availability(attributes):
    """What a declaration's `@available` attributes say, per platform."""
    versions = {}
    for attribute in attributes or []:
        if not isinstance(attribute, dict) or attribute.get("_kind") != "available_attr":
            continue
        domain = attribute.get("domain")
        if domain == "*" and attribute.get("unavailable"):
            return {platform: "unavailable" for platform in FLOORS}
        if domain not in FLOORS:
            continue
        if attribute.get("unavailable"):
            versions[domain] = "unavailable"
        elif "introduced" in attribute:
            versions[domain] = parse_version(attribute["introduced"])
    return versions


def available_condition(node):
    """The platforms an `if #available(…)` or `guard #available(…)` condition raises, if it is one."""
    versions = {}
    for condition in node.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("_kind") == "#available":
            for spec in condition.get("queries", []):
                if spec.get("domain") in FLOORS and "version" in spec:
                    versions[spec["domain"]] = parse_version(spec["version"])
    return versions


def audit(documents, symbols, demangled):
    """References whose availability exceeds the floors, outside the availability checks that allow them."""
    problems = {}
    type_cache = {}

    def types_named(mangled):
        if mangled not in type_cache:
            text = demangled.get(mangled, "")
            type_cache[mangled] = [symbols.types_by_name[name] for name in names_in([text])
                                   if name in symbols.types_by_name]
        return type_cache[mangled]

    for document in documents:
        path = document.get("filename", "")
        source = open(path, "rb").read() if os.path.exists(path) else b""
        regions = excluded_regions(path) if source else []
        overrides, iteration = {}, set()

        def check(usr, context, offset, what):
            if usr not in symbols.by_usr:
                return
            for platform, needs in symbols.availability(usr).items():
                have = context[platform]
                if have == "unavailable":
                    continue
                if any(start <= offset < end and platform == excluded for start, end, excluded in regions):
                    continue
                if needs == "unavailable" or needs > have:
                    line = source[:offset].count(b"\n") + 1
                    place = f"{os.path.relpath(path)}:{line}: {what} {symbols.qualified(usr)}, which needs"
                    problems.setdefault(place, set()).add(
                        f"{platform} {version_text(needs)} (here {version_text(have)})")

        def visit(node, state):
            context, offset, machinery = state
            if id(node) in overrides:
                context = raised(context, overrides[id(node)])
            machinery = machinery or id(node) in iteration
            if isinstance(node.get("range"), dict) and "start" in node["range"]:
                offset = node["range"]["start"]
            if isinstance(node.get("attrs"), list):
                context = raised(context, declared_availability(node["attrs"]))
            kind = node.get("_kind")
            if kind in ("if_stmt", "guard_stmt", "while_stmt"):
                # `if #available(…), other conditions { then }`: the conditions after it and `then` are raised.
                versions = {}
                for condition in node.get("conditions") or []:
                    if isinstance(condition, dict):
                        if versions:
                            overrides[id(condition)] = dict(versions)
                        if condition.get("_kind") == "#available":
                            versions.update(available_condition({"conditions": [condition]}))
                if versions and kind != "guard_stmt" and isinstance(node.get("then_stmt", node.get("body")), dict):
                    overrides[id(node.get("then_stmt", node.get("body")))] = versions
            if kind == "for_each_stmt":
                # The iteration a `for await` makes: below iOS 18 the compiler calls `next()`, not `next(isolation:)`.
                for key, value in node.items():
                    if key not in ("body", "parsed_sequence", "pattern", "where") and isinstance(value, (dict, list)):
                        iteration.add(id(value))
            if kind == "brace_stmt":
                versions = {}
                for element in node.get("elements", []):
                    if not isinstance(element, dict):
                        continue
                    if versions:
                        overrides[id(element)] = dict(versions)
                    if element.get("_kind") == "guard_stmt":
                        versions.update(available_condition(element))
            if kind == "decl_ref" and node.get("decl_usr", "").startswith("s:"):
                usr = node["decl_usr"]
                if not (machinery and symbols.by_usr.get(usr, {}).get("pathComponents", [""])[-1] == "next(isolation:)"):
                    check(usr, context, offset, "uses")
            if isinstance(node.get("protocol"), str) and node["protocol"].startswith("s:"):
                check(node["protocol"], context, offset, "conforms to")
            for key in ("type", "type_usr", "interface_type", "result", "extended_type"):
                value = node.get(key)
                if isinstance(value, str) and value.startswith("$s"):
                    for usr in types_named(value):
                        check(usr, context, offset, "names")
            return (context, offset, machinery)

        walk(document, visit, (dict(FLOORS), 0, False))
    return sorted(f"{place} {', '.join(sorted(platforms))}" for place, platforms in problems.items())


# MARK: The report


def apple_api(stand_ins, used):
    """Every stand-in declaration the code needs, with the platforms it is on from which version."""
    rows = []
    for usr in used:
        name = stand_ins.qualified(usr)
        needs = stand_ins.availability(usr)
        platforms = ", ".join(
            f"{platform} {version_text(needs[platform])}" if needs.get(platform) != "unavailable"
            else f"not {platform}" for platform in FLOORS if platform in needs)
        rows.append((name, platforms))
    return sorted(set(rows))


class Context:
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True, help="the repository's root")
    parser.add_argument("--scratch", required=True, help="SwiftPM's .build folder")
    parser.add_argument("--triple", default="x86_64-unknown-linux-gnu")
    parser.add_argument("--stand-ins", help="the stand-ins' folder (default: Tests/AppleStandIns)")
    parser.add_argument("--report", help="where to write the list of Apple API used")
    parser.add_argument("--docs", help="the folder holding README.md and docs/ (default: --package)")
    parser.add_argument("--work", default="apple-stand-ins", help="the folder of this check's files in --scratch")
    parser.add_argument("--only", choices=["compile", "drift"],
                        help="compile: steps 1, 2 and 5 only; drift: step 3 only, over the references a full run saved")
    parser.add_argument("--add-client-source", action="append", default=[], metavar="FILE",
                        help="compile FILE as one more source of TillClient (a test plants a defect this way)")
    parser.add_argument("--sdk", action="append", metavar="NAME",
                        help="compile with the SDKs whose names contain NAME only (a test planting a defect one SDK "
                             "shows; default: every SDK)")
    options = parser.parse_args()
    if options.sdk and options.only != "compile":
        parser.error("--sdk narrows the compile step: give it with --only compile")

    started = time.monotonic()
    context = Context()
    context.package = os.path.abspath(options.package)
    context.triple = options.triple
    context.stand_in_dir = os.path.abspath(options.stand_ins or os.path.join(context.package, "Tests/AppleStandIns"))
    scratch = os.path.abspath(options.scratch)
    context.yaml = open(os.path.join(scratch, "debug.yaml")).read()
    context.build_modules = os.path.join(scratch, options.triple, "debug", "Modules")
    work = os.path.join(scratch, options.work)
    shutil.rmtree(os.path.join(work, "modules"), ignore_errors=True)
    context.modules = os.path.join(work, "modules")
    context.module_cache = os.path.join(scratch, "apple-stand-ins", "ModuleCache")
    saved_references = os.path.join(scratch, "apple-stand-ins", "references.json")
    os.makedirs(context.modules, exist_ok=True)
    context.stand_in_flags = ["-module-cache-path", context.module_cache, "-I", context.stand_in_dir,
                              "-Xfrontend", "-enable-cross-import-overlays"]
    context.work = work
    context.sdk = SDKS[-1][0]
    context.client_arguments = target_arguments(context.yaml, "TillClient", options.triple)
    if options.add_client_source:
        context.client_arguments = with_sources(
            context.client_arguments,
            sources_of(context.client_arguments) + [os.path.abspath(path) for path in options.add_client_source],
            work)
    example = os.path.join(context.package, "Examples/TillShop.swiftpm/App")
    context.example_sources = sorted(os.path.join(example, name) for name in os.listdir(example)
                                     if name.endswith(".swift"))
    context.docs_root = os.path.abspath(options.docs or context.package)
    context.doc_examples = os.path.join(context.stand_in_dir, "DocExamples")
    context.doc_example_sources = sorted(os.path.join(context.doc_examples, name)
                                         for name in os.listdir(context.doc_examples) if name.endswith(".swift"))
    timings, failures = {}, []

    def timed(name, work_item):
        begin = time.monotonic()
        try:
            return work_item()
        finally:
            timings[name] = time.monotonic() - begin

    if options.only == "drift":
        graphs = os.path.join(work, "symbols")
        shutil.rmtree(graphs, ignore_errors=True)
        extract_symbols(context, STAND_INS, graphs, ["-I", context.stand_in_dir])
        stand_ins = Symbols()
        for name in os.listdir(graphs):
            stand_ins.load(os.path.join(graphs, name))
        stand_ins.index_types()
        saved = json.load(open(saved_references))
        unused, _ = drift(context, stand_ins, set(saved["usrs"]), set(saved["types"]),
                          {tuple(pair) for pair in saved["cases"]})
        if unused:
            print("Stand-in declarations nothing in TillClient, the example app or the docs' examples uses:\n  "
                  + "\n  ".join(unused),
                  file=sys.stderr)
        print(f"drift checked in {time.monotonic() - started:.1f} s")
        return 1 if unused else 0

    def compile_all(sdk_context):
        compile_client(sdk_context)
        compile_example(sdk_context)
        compile_doc_examples(sdk_context)

    try:
        find_doc_examples(context)
        interfaces = [os.path.join(root, file) for root, _, files in os.walk(context.stand_in_dir) for file in files
                      if file.endswith((".swiftinterface", ".swiftoverlay"))]
        above = conditions_above_newest(sources_of(context.client_arguments) + context.example_sources
                                        + context.doc_example_sources + interfaces)
        if above:
            raise Failure(f"`compiler(>=…)` conditions above the newest SDK's Swift ({version_text(SDKS[-1][1])}, "
                          f"{SDKS[-1][0]}): add that SDK to SDKS in check.py first\n  " + "\n  ".join(above))
        chosen = [sdk for sdk in SDKS if not options.sdk or any(name in sdk[0] for name in options.sdk)]
        # The newest SDK is the stand-ins as they are (no condition above its Swift, and this compiler is newer).
        if SDKS[-1] in chosen:
            timed(f"TillClient, the example and the docs' examples, {SDKS[-1][0]} (swiftc -emit-sil)",
                  lambda: compile_all(context))
        older = [for_sdk(context, sdk) for sdk in SDKS[:-1] if sdk in chosen]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            begin = time.monotonic()
            for future in [pool.submit(compile_all, variant) for variant in older]:
                future.result()
            timings["the same with the older SDKs (" + ", ".join(sdk for sdk, _ in SDKS[:-1]) + ")"] = (
                time.monotonic() - begin)
        clashes = timed("the names an app sees twice (symbol graphs)", lambda: name_clashes(context))
        if clashes:
            raise Failure("Public names of the client package that an Apple module declares too (an app that imports "
                          "both cannot write them; rename them):\n  " + "\n  ".join(clashes))
    except Failure as failure:
        print(failure, file=sys.stderr)
        return 1
    if options.only == "compile":
        print(f"compiled in {time.monotonic() - started:.1f} s")
        return 0

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        asts = {target: pool.submit(client_ast, context, target) for target in CLIENT_MODULES}
        asts["TillShop"] = pool.submit(example_ast, context)
        asts["TillDocExamples"] = pool.submit(example_ast, context, "TillDocExamples", context.doc_example_sources)
        graphs = os.path.join(work, "symbols")
        shutil.rmtree(graphs, ignore_errors=True)
        begin = time.monotonic()
        extract_symbols(context, STAND_INS, graphs, ["-I", context.stand_in_dir])
        # The toolchain's modules change only with the toolchain: their graphs are kept between runs.
        toolchain = run(["swiftc", "--version"])[1] + " ".join(SYSTEM_MODULES)
        system = os.path.join(work, "system-symbols-%08x" % (zlib.crc32(toolchain.encode()) & 0xFFFFFFFF))
        if not os.path.isdir(system):
            shutil.rmtree(system + ".partial", ignore_errors=True)
            extract_symbols(context, SYSTEM_MODULES, system + ".partial", [])
            os.rename(system + ".partial", system)
        dependencies = os.path.join(work, "dependency-symbols")
        shutil.rmtree(dependencies, ignore_errors=True)
        extract_symbols(context, DEPENDENCY_MODULES, dependencies,
                        ["-I", context.build_modules] + clang_arguments(context.client_arguments))
        timings["symbol graphs"] = time.monotonic() - begin
        begin = time.monotonic()
        documents = {target: future.result() for target, future in asts.items()}
        timings["ASTs (swiftc -dump-ast)"] = time.monotonic() - begin

    begin = time.monotonic()
    stand_ins = Symbols()
    for name in os.listdir(graphs):
        stand_ins.load(os.path.join(graphs, name))
    stand_ins.index_types()
    apple_documents = documents["TillClient"] + documents["TillShop"] + documents["TillDocExamples"]
    used_usrs, type_symbols, cases = references(apple_documents)
    demangled = demangle(type_symbols | {usr.replace("s:", "$s", 1) for usr in used_usrs}
                         | {text for text, _ in cases})
    type_texts = set(demangled.values())
    case_texts = {(demangled.get(text, text), name) for text, name in cases}
    with open(saved_references, "w") as file:
        json.dump({"usrs": sorted(used_usrs), "types": sorted(type_texts), "cases": sorted(case_texts)}, file)
    unused, used = drift(context, stand_ins, used_usrs, type_texts, case_texts)
    mismatched = pinned_mismatches(context, stand_ins)
    if mismatched:
        failures.append("Stand-in declarations whose USR is not Apple's (Tests/AppleStandIns/apple-usrs.txt):\n  "
                        + "\n  ".join(mismatched))
    if unused:
        failures.append("Stand-in declarations nothing in TillClient, the example app or the docs' examples uses "
                        "(remove them, or the "
                        "code that stopped using them changed on purpose):\n  " + "\n  ".join(unused))
    timings["drift"] = time.monotonic() - begin

    begin = time.monotonic()
    everything = Symbols()
    for folder in (graphs, system, dependencies):
        for name in os.listdir(folder):
            everything.load(os.path.join(folder, name))
    everything.index_types()
    client_documents = [document for target in CLIENT_MODULES for document in documents[target]]
    _, client_types, _ = references(client_documents)
    client_demangled = demangle(client_types)
    problems = audit(client_documents, everything, client_demangled)
    if problems:
        failures.append("API used above the floors (iOS 15, macOS 12, tvOS 15, watchOS 8, visionOS 1) outside an "
                        "availability check:\n  " + "\n  ".join(problems))
    timings["availability"] = time.monotonic() - begin

    rows = apple_api(stand_ins, used)
    report = ["# Apple API TillClient, the example app and the docs' examples use, as the stand-ins declare it", ""]
    report += [f"{name}: {platforms}" for name, platforms in rows]
    report += ["", "# Timings (seconds)"] + [f"{name}: {seconds:.1f}" for name, seconds in timings.items()]
    report += [f"total: {time.monotonic() - started:.1f}"]
    if options.report:
        with open(options.report, "w") as file:
            file.write("\n".join(report) + "\n")
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"checked {sum(len(value) for value in documents.values())} files, {len(rows)} Apple symbols used, "
          f"{len(stand_ins.by_usr)} stand-in symbols, in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(failure, file=sys.stderr)
        sys.exit(1)
