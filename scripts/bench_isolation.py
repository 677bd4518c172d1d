#!/usr/bin/env python3
"""The delivery-isolation part of the benchmark (scripts/bench.sh runs it after bench.py, in the same
run): one dispatcher, four ad networks each with its own receiver, postbacks due for all four
interleaved on `postbacks`. Measured twice on a fresh Redis each time: with every receiver answering,
then with the fourth one hanging (it accepts and holds every request far past DELIVERY_TIMEOUT_MS).
The figure is deliveries per second to the three answering destinations, from the load until their
last postback arrived; the isolation ratio is the second figure over the first (target ≥ 90 %).
Receivers record without checking signatures (`--signatures later`) so that the dispatcher, not the
receivers, is what is measured. Writes OUT/isolation.json and appends a section to OUT/report.md.

  bench_isolation.py BIN OUT

Environment: BENCH_ISOLATION_POSTBACKS (8000, a quarter per network)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import Pipeline, Processes, free_port, http, start_redis, until

BIN, OUT = sys.argv[1], os.path.abspath(sys.argv[2])
POSTBACKS = int(os.environ.get("BENCH_ISOLATION_POSTBACKS", "8000"))
NETWORKS = [f"isolation{index}.adattributionkit" for index in range(4)]
CHUNKS = 8  # loads per network, alternating between networks, so the stream interleaves them
TOKEN = "bench-admin-token-of-at-least-32-characters"


def run(hanging):
    """Deliveries per second to the three answering destinations; the fourth hangs when `hanging`."""
    label = "hanging" if hanging else "healthy"
    children = Processes(os.path.join(OUT, f"isolation-{label}"))
    os.makedirs(children.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="bench-isolation-")
    try:
        port = free_port()
        start_redis(children, port, data, aof=False)
        url = f"redis://127.0.0.1:{port}/0"
        pipeline = Pipeline(children, BIN, url, os.path.join(data, "keys"), TOKEN)
        pipeline.start_http()
        pipeline.start("dispatcher")
        receivers = []
        for index, network in enumerate(NETWORKS):
            receiver_port = free_port()
            output = os.path.join(children.out, f"postbacks{index}.jsonl")
            pipeline.start_receiver(receiver_port, output, "--signatures", "later", name=f"receiver{index}")
            receiver = f"http://127.0.0.1:{receiver_port}"
            pipeline.register_network(network, receiver)
            receivers.append(receiver)
        if hanging:
            http("POST", receivers[-1] + "/control", {"delay-ms": 600_000})
        answering = receivers[:3]
        time.sleep(2)  # the registry cached, the dispatcher's groups made
        started = time.time()
        for _ in range(CHUNKS):
            for network in NETWORKS:
                subprocess.run(
                    [
                        f"{BIN}/attribution-bench",
                        "preload",
                        "--redis-url",
                        url,
                        "--kind",
                        "postbacks",
                        "--count",
                        str(POSTBACKS // len(NETWORKS) // CHUNKS),
                        "--network",
                        network,
                    ],
                    check=True,
                    capture_output=True,
                )
        expected = 3 * (POSTBACKS // len(NETWORKS) // CHUNKS) * CHUNKS

        def arrived():
            return sum(http("GET", receiver + "/stats").get("accepted", 0) for receiver in answering)

        if not until(lambda: arrived() >= expected, 300, 0.02):
            raise SystemExit(f"isolation ({label}): {arrived()} of {expected} postbacks arrived in 300 s")
        wall = time.time() - started
        return {"postbacks_to_answering": expected, "wall_s": wall, "deliveries_per_s": expected / wall}
    finally:
        children.stop_all()
        shutil.rmtree(data, ignore_errors=True)


def main():
    healthy = run(hanging=False)
    hanging = run(hanging=True)
    ratio = hanging["deliveries_per_s"] / healthy["deliveries_per_s"]
    result = {"healthy": healthy, "one_of_four_hanging": hanging, "ratio": ratio, "target": 0.9}
    with open(os.path.join(OUT, "isolation.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(
        f"isolation: {healthy['deliveries_per_s']:,.0f} deliveries/s to three answering destinations with all four answering, "
        f"{hanging['deliveries_per_s']:,.0f} with the fourth hanging: {ratio:.0%} (target ≥ 90 %)"
    )
    lines = [
        "",
        "## Delivery isolation: one of four destinations hanging",
        "",
        f"One dispatcher, four ad networks each with its own receiver, {POSTBACKS:,} postbacks due for all four, "
        "interleaved. Deliveries per second to the three answering destinations, from the load until their last "
        "postback arrived; then the same with the fourth receiver holding every request past the delivery timeout.",
        "",
        "| | deliveries/s to the three answering | ratio |",
        "|---|---|---|",
        f"| all four answering | {healthy['deliveries_per_s']:,.0f} | 100 % |",
        f"| the fourth hanging | {hanging['deliveries_per_s']:,.0f} | {ratio:.0%} (target ≥ 90 %) |",
    ]
    with open(os.path.join(OUT, "report.md"), "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
