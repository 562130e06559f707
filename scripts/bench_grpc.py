"""Measures one `opcat catalog serve` (driven by scripts/bench-grpc.sh).

Start-to-serving: from spawning the server to its first SERVING answer to
grpc.health.v1.Health/Check (polled every 2 ms). Then ListBundles is read RUNS times
(bundles/s and MB/s of encoded messages, best run), peak RSS is the server's VmHWM, and
shutdown is the time from SIGTERM to exit. Prints one tab-separated row.

Usage: bench_grpc.py OPCAT PROTO CATALOG NAME PORT RUNS
"""

import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc


def compile_proto(proto):
    out = tempfile.mkdtemp(prefix="bench-grpc-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    if protoc.main(["protoc", f"-I{os.path.dirname(proto)}", f"-I{include}", f"--python_out={out}",
                    f"--grpc_python_out={out}", os.path.basename(proto)]) != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, out)
    return importlib.import_module("registry_pb2"), importlib.import_module("registry_pb2_grpc")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    opcat, proto, catalog, name, port, runs = sys.argv[1:7]
    pb, pb_grpc = compile_proto(os.path.abspath(proto))
    address = f"127.0.0.1:{port}"
    check = b"\n\x08Registry"
    started = time.monotonic()
    server = subprocess.Popen([opcat, "catalog", "serve", catalog, "--listen", address],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Reconnect at once while the server starts (gRPC's default first backoff is 1 s, which
    # would be measured instead of the server).
    channel = grpc.insecure_channel(address, options=[
        ("grpc.max_receive_message_length", 64 << 20),
        ("grpc.initial_reconnect_backoff_ms", 2),
        ("grpc.min_reconnect_backoff_ms", 2),
        ("grpc.max_reconnect_backoff_ms", 2),
    ])
    health = channel.unary_unary("/grpc.health.v1.Health/Check")
    serving = None
    while serving is None:
        if server.poll() is not None:
            sys.exit(f"opcat catalog serve exited with {server.returncode}")
        try:
            if health(check, timeout=1) == b"\x08\x01":
                serving = time.monotonic() - started
        except grpc.RpcError:
            time.sleep(0.002)
        if time.monotonic() - started > 120:
            sys.exit("not serving within 120 s")
    registry = pb_grpc.RegistryStub(channel)
    best = None
    for _ in range(int(runs)):
        begin = time.monotonic()
        count, size = 0, 0
        for bundle in registry.ListBundles(pb.ListBundlesRequest(), timeout=300):
            count += 1
            size += bundle.ByteSize()
        took = time.monotonic() - begin
        if best is None or took < best[0]:
            best = (took, count, size)
    rss = peak_rss_mib(server.pid)
    stop = time.monotonic()
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=30)
    stopped = time.monotonic() - stop
    took, count, size = best
    print("\t".join([
        name,
        f"{serving * 1000:.0f}",
        f"{rss:.0f}",
        f"{count}",
        f"{took * 1000:.0f}",
        f"{count / took:.0f}",
        f"{size / took / 1e6:.1f}",
        f"{stopped * 1000:.0f}",
        str(code),
    ]))


if __name__ == "__main__":
    main()
