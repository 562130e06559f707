"""A third-party client of `opcat catalog serve`: Python grpcio calls every RPC of the
operator-registry API (`api.Registry`) and the health service, and compares each answer with
what the catalog itself says (the output of `opcat catalog render` of the same catalog).

The expected answers are computed here from the rendered blobs, following operator-registry's
file-based catalog querier (pkg/cache) and model conversion (pkg/api/model_to_api.go), not from
opcat's code.

Usage: registry_grpc_check.py --proto proto/registry.proto --address HOST:PORT --render FILE
Exit code 0 when every answer matches; 1 with the differences otherwise.
"""

import argparse
import base64
import importlib
import json
import os
import sys
import tempfile

import grpc
import yaml
from google.protobuf.json_format import MessageToDict
from grpc_tools import protoc


class Checks:
    def __init__(self):
        self.passed = 0
        self.failures = []

    def equal(self, what, got, expected):
        if got == expected:
            self.passed += 1
        else:
            self.failures.append(f"{what}:\n  got:      {got!r}\n  expected: {expected!r}")

    def true(self, what, condition):
        self.equal(what, bool(condition), True)


def compile_proto(proto):
    """Compiles registry.proto with grpcio-tools into importable modules."""
    out = tempfile.mkdtemp(prefix="registry-proto-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = [
        "protoc",
        f"-I{os.path.dirname(os.path.abspath(proto))}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        os.path.basename(proto),
    ]
    if protoc.main(args) != 0:
        sys.exit(f"protoc failed on {proto}")
    sys.path.insert(0, out)
    return importlib.import_module("registry_pb2"), importlib.import_module("registry_pb2_grpc")


def blobs(path):
    """The JSON blobs of a `catalog render` stream."""
    text = open(path, encoding="utf-8").read()
    decoder, index, found = json.JSONDecoder(), 0, []
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return found
        blob, index = decoder.raw_decode(text, index)
        found.append(blob)


class NoTimestamps(yaml.SafeLoader):
    """YAML as go-yaml reads manifests into JSON: timestamps stay strings."""


NoTimestamps.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def manifest(data):
    text = base64.b64decode(data).decode("utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return yaml.load(text, Loader=NoTimestamps)


class Catalog:
    """The catalog as its blobs say."""

    def __init__(self, items):
        self.packages = {b["name"]: b for b in items if b["schema"] == "olm.package"}
        self.channels = {}
        for b in items:
            if b["schema"] == "olm.channel":
                self.channels.setdefault(b["package"], {})[b["name"]] = b["entries"]
        self.bundles = {(b["package"], b["name"]): b for b in items if b["schema"] == "olm.bundle"}
        self.deprecations = {}
        for b in items:
            if b["schema"] == "olm.deprecations":
                for entry in b.get("entries") or []:
                    ref = entry["reference"]
                    key = (b["package"], ref["schema"], ref.get("name", ""))
                    self.deprecations[key] = entry["message"]
        known = {"olm.package", "olm.channel", "olm.bundle", "olm.deprecations"}
        self.others = [b for b in items if b["schema"] not in known]

    def head(self, package, channel):
        entries = self.channels[package][channel]
        replaced = set()
        for e in entries:
            if e.get("replaces"):
                replaced.add(e["replaces"])
            replaced.update(e.get("skips") or [])
        heads = [e["name"] for e in entries if e["name"] not in replaced]
        assert len(heads) == 1, f"{package}/{channel} heads {heads}"
        return heads[0]

    def entry(self, package, channel, name):
        return next(e for e in self.channels[package][channel] if e["name"] == name)

    def props(self, package, name, type_):
        return [p["value"] for p in self.bundles[(package, name)].get("properties") or [] if p["type"] == type_]

    def provides(self, package, name, gvk):
        return any(
            (v["group"], v["version"], v["kind"]) == gvk for v in self.props(package, name, "olm.gvk")
        )

    def each_entry(self):
        for package in sorted(self.channels):
            for channel in sorted(self.channels[package]):
                for entry in self.channels[package][channel]:
                    yield package, channel, entry


def as_struct(value):
    """A JSON value as google.protobuf.Struct holds it: every number a double."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [as_struct(v) for v in value]
    return {k: as_struct(v) for k, v in value.items()}


def entries_or_not_found(call):
    """The sorted channel entries a streaming call answers, or its error code."""
    try:
        return sorted((g.packageName, g.channelName, g.bundleName, g.replaces) for g in call())
    except grpc.RpcError as error:
        return error.code()


def gvks(values):
    return sorted((v["group"], v["version"], v["kind"]) for v in values)


def api_gvks(messages):
    return sorted((m.group, m.version, m.kind) for m in messages)


def deprecation(message):
    return message.deprecation.message if message.HasField("deprecation") else None


def check_bundle(checks, catalog, got, package, channel, name, trimmed, manifests):
    what = f"bundle {package}/{channel}/{name}"
    blob = catalog.bundles[(package, name)]
    entry = catalog.entry(package, channel, name)
    checks.equal(f"{what} identity", (got.csvName, got.packageName, got.channelName), (name, package, channel))
    checks.equal(f"{what} bundlePath", got.bundlePath, blob.get("image", ""))
    checks.equal(f"{what} version", got.version, catalog.props(package, name, "olm.package")[0]["version"])
    checks.equal(f"{what} skipRange", got.skipRange, entry.get("skipRange", ""))
    if trimmed:
        checks.equal(f"{what} replaces and skips", (got.replaces, list(got.skips)), ("", []))
    else:
        checks.equal(
            f"{what} replaces and skips",
            (got.replaces, list(got.skips)),
            (entry.get("replaces", ""), entry.get("skips") or []),
        )
    checks.equal(f"{what} providedApis", api_gvks(got.providedApis), gvks(catalog.props(package, name, "olm.gvk")))
    checks.equal(
        f"{what} requiredApis", api_gvks(got.requiredApis), gvks(catalog.props(package, name, "olm.gvk.required"))
    )
    expected_props = sorted(
        (p["type"], json.dumps(p["value"], sort_keys=True))
        for p in blob.get("properties") or []
        if p["type"] not in ("olm.bundle.object", "olm.csv.metadata")
    )
    got_props = sorted((p.type, json.dumps(json.loads(p.value), sort_keys=True)) for p in got.properties)
    checks.equal(f"{what} properties", got_props, expected_props)
    expected_deps = sorted(
        [("olm.gvk", json.dumps(v, sort_keys=True)) for v in catalog.props(package, name, "olm.gvk.required")]
        + [
            ("olm.package", json.dumps({"packageName": v["packageName"], "version": v["versionRange"]}, sort_keys=True))
            for v in catalog.props(package, name, "olm.package.required")
        ]
    )
    got_deps = sorted((d.type, json.dumps(json.loads(d.value), sort_keys=True)) for d in got.dependencies)
    checks.equal(f"{what} dependencies", got_deps, expected_deps)
    checks.equal(f"{what} deprecation", deprecation(got), catalog.deprecations.get((package, "olm.bundle", name)))
    objects = [manifest(v["data"]) for v in catalog.props(package, name, "olm.bundle.object")]
    if not manifests:
        checks.equal(f"{what} has no manifests (it has an image)", (got.csvJson, list(got.object)), ("", []))
        return
    got_objects = [json.loads(o) for o in got.object]
    if objects:
        checks.equal(f"{what} objects", got_objects, objects)
        csvs = [o for o in objects if o.get("kind") == "ClusterServiceVersion"]
        checks.equal(f"{what} csvJson", json.loads(got.csvJson) if got.csvJson else None, csvs[0] if csvs else None)
    elif catalog.props(package, name, "olm.csv.metadata"):
        csv = json.loads(got.csvJson)
        checks.equal(
            f"{what} synthetic csvJson",
            (csv["kind"], csv["metadata"]["name"], got_objects),
            ("ClusterServiceVersion", name, [csv]),
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto", required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--render", required=True)
    args = parser.parse_args()
    pb, pb_grpc = compile_proto(args.proto)
    catalog = Catalog(blobs(args.render))
    options = [("grpc.max_receive_message_length", 64 << 20)]
    channel = grpc.insecure_channel(args.address, options=options)
    grpc.channel_ready_future(channel).result(timeout=60)
    registry = pb_grpc.RegistryStub(channel)
    checks = Checks()

    # grpc.health.v1.Health/Check, encoded by hand: HealthCheckRequest{service} and the status
    # enum of the response (1 = SERVING).
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=None, response_deserializer=None)
    for service in ("", "Registry"):
        request = b"\n" + bytes([len(service)]) + service.encode() if service else b""
        checks.equal(f"health of {service!r}", check(request, timeout=10), b"\x08\x01")

    # ListPackages, GetPackage.
    names = [p.name for p in registry.ListPackages(pb.ListPackageRequest(), timeout=60)]
    checks.equal("ListPackages", sorted(names), sorted(catalog.packages))
    for name in sorted(catalog.packages):
        got = registry.GetPackage(pb.GetPackageRequest(name=name), timeout=60)
        expected_channels = [
            (channel, catalog.head(name, channel), catalog.deprecations.get((name, "olm.channel", channel)))
            for channel in sorted(catalog.channels.get(name, {}))
        ]
        checks.equal(
            f"GetPackage {name}",
            (got.name, got.defaultChannelName, [(c.name, c.csvName, deprecation(c)) for c in got.channels]),
            (name, catalog.packages[name]["defaultChannel"], expected_channels),
        )
        checks.equal(f"GetPackage {name} deprecation", deprecation(got), catalog.deprecations.get((name, "olm.package", "")))
    try:
        registry.GetPackage(pb.GetPackageRequest(name="no-such-package"), timeout=60)
        checks.true("GetPackage of a missing package fails", False)
    except grpc.RpcError as error:
        checks.equal("GetPackage of a missing package", error.code(), grpc.StatusCode.NOT_FOUND)

    # ListBundles: one message per channel entry, manifests only for bundles without an image.
    listed = list(registry.ListBundles(pb.ListBundlesRequest(), timeout=300))
    checks.equal(
        "ListBundles entries",
        sorted((b.packageName, b.channelName, b.csvName) for b in listed),
        sorted((p, c, e["name"]) for p, c, e in catalog.each_entry()),
    )
    for got in listed:
        image = catalog.bundles[(got.packageName, got.csvName)].get("image", "")
        check_bundle(checks, catalog, got, got.packageName, got.channelName, got.csvName, False, not image)

    # GetBundle (every entry), GetBundleForChannel (every channel).
    for package, channel, entry in catalog.each_entry():
        got = registry.GetBundle(pb.GetBundleRequest(pkgName=package, channelName=channel, csvName=entry["name"]), timeout=60)
        check_bundle(checks, catalog, got, package, channel, entry["name"], True, True)
    for package in sorted(catalog.channels):
        for channel in sorted(catalog.channels[package]):
            got = registry.GetBundleForChannel(pb.GetBundleInChannelRequest(pkgName=package, channelName=channel), timeout=60)
            checks.equal(f"GetBundleForChannel {package}/{channel}", got.csvName, catalog.head(package, channel))

    # GetChannelEntriesThatReplace and GetBundleThatReplaces, for every bundle some entry names.
    named = sorted({e["replaces"] for _, _, e in catalog.each_entry() if e.get("replaces")}
                   | {s for _, _, e in catalog.each_entry() for s in e.get("skips") or []})
    for name in named:
        expected = []
        for package, channel, e in catalog.each_entry():
            replaces = e.get("replaces", "")
            count = int(replaces == name) + sum(1 for s in e.get("skips") or [] if s == name and s != replaces)
            expected += [(package, channel, e["name"], replaces)] * count
        checks.equal(
            f"GetChannelEntriesThatReplace {name}",
            entries_or_not_found(
                lambda: registry.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest(csvName=name), timeout=60)
            ),
            sorted(expected) or grpc.StatusCode.NOT_FOUND,
        )
    for package, channel, e in catalog.each_entry():
        for name in ([e["replaces"]] if e.get("replaces") else []):
            first = next(
                x["name"] for x in catalog.channels[package][channel]
                if x.get("replaces") == name or name in (x.get("skips") or [])
            )
            got = registry.GetBundleThatReplaces(
                pb.GetReplacementRequest(csvName=name, pkgName=package, channelName=channel), timeout=60
            )
            checks.equal(f"GetBundleThatReplaces {package}/{channel}/{name}", got.csvName, first)

    # The provider queries, for every API some bundle provides.
    apis = sorted({(v["group"], v["version"], v["kind"]) for (p, n) in catalog.bundles for v in catalog.props(p, n, "olm.gvk")})
    for gvk in apis:
        request = dict(group=gvk[0], version=gvk[1], kind=gvk[2])
        every, latest = [], []
        for package, channel, e in catalog.each_entry():
            if not catalog.provides(package, e["name"], gvk):
                continue
            in_channel = {x["name"] for x in catalog.channels[package][channel]}
            replaces = e.get("replaces", "")
            rows = [(package, channel, e["name"], replaces)]
            every += rows + [(package, channel, e["name"], s) for s in e.get("skips") or [] if s != replaces]
            if e["name"] == catalog.head(package, channel):
                latest += rows + [
                    (package, channel, e["name"], s) for s in e.get("skips") or [] if s != replaces and s in in_channel
                ]
        streamed = lambda call, message: entries_or_not_found(lambda: call(message, timeout=60))
        checks.equal(
            f"GetChannelEntriesThatProvide {gvk}",
            streamed(registry.GetChannelEntriesThatProvide, pb.GetAllProvidersRequest(**request)),
            sorted(every) or grpc.StatusCode.NOT_FOUND,
        )
        checks.equal(
            f"GetLatestChannelEntriesThatProvide {gvk}",
            streamed(registry.GetLatestChannelEntriesThatProvide, pb.GetLatestProvidersRequest(**request)),
            sorted(latest) or grpc.StatusCode.NOT_FOUND,
        )
        defaults = sorted((p, b) for p, c, b, _ in latest if catalog.packages[p]["defaultChannel"] == c)
        try:
            got = registry.GetDefaultBundleThatProvides(pb.GetDefaultProviderRequest(**request), timeout=60)
            checks.equal(f"GetDefaultBundleThatProvides {gvk}", (got.packageName, got.csvName), defaults[0] if defaults else None)
        except grpc.RpcError as error:
            checks.equal(f"GetDefaultBundleThatProvides {gvk} fails only without a default head", (error.code(), defaults), (grpc.StatusCode.NOT_FOUND, []))

    # ListPackageCustomSchemas: every kept blob, by schema and package; a schema is required.
    for schema, package in sorted({(b["schema"], b.get("package", "")) for b in catalog.others}):
        got = registry.ListPackageCustomSchemas(pb.ListPackageCustomSchemasRequest(schema=schema, packageName=package), timeout=60)
        expected = [as_struct(b) for b in catalog.others if b["schema"] == schema and b.get("package", "") == package]
        got = [MessageToDict(g) for g in got]
        key = lambda value: json.dumps(value, sort_keys=True)
        checks.equal(f"ListPackageCustomSchemas {schema}/{package}", sorted(got, key=key), sorted(expected, key=key))
    try:
        list(registry.ListPackageCustomSchemas(pb.ListPackageCustomSchemasRequest(schema=""), timeout=60))
        checks.true("ListPackageCustomSchemas without a schema fails", False)
    except grpc.RpcError as error:
        checks.equal("ListPackageCustomSchemas without a schema", error.code(), grpc.StatusCode.INVALID_ARGUMENT)

    for failure in checks.failures[:40]:
        print(failure)
    print(f"{checks.passed} passed, {len(checks.failures)} failed")
    sys.exit(1 if checks.failures else 0)


if __name__ == "__main__":
    main()
