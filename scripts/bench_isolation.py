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

from harness import Pipeline, Processes, free_port, http, start_redis, until, use_binaries

POSTBACKS = int(os.environ.get("BENCH_ISOLATION_POSTBACKS", "8000"))
NETWORKS = [f"isolation{index}.adattributionkit" for index in range(4)]
CHUNKS = 8  # loads per network, alternating between networks, so the stream interleaves them
TOKEN = "bench-admin-token-of-at-least-32-characters"


def run(bin_dir, out, hanging):
    """Deliveries per second to the three answering destinations; the fourth hangs when `hanging`."""
    label = "hanging" if hanging else "healthy"
    children = Processes(os.path.join(out, f"isolation-{label}"))
    os.makedirs(children.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="bench-isolation-")
    try:
        port = free_port()
        start_redis(children, port, data, aof=False)
        url = f"redis://127.0.0.1:{port}/0"
        pipeline = Pipeline(children, bin_dir, url, os.path.join(data, "keys"), TOKEN)
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
                        f"{bin_dir}/attribution-bench",
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


def isolation(healthy, hanging):
    """isolation.json's figures from the two runs: the ratio is the hanging run's rate over the healthy one's."""
    ratio = hanging["deliveries_per_s"] / healthy["deliveries_per_s"]
    return {"healthy": healthy, "one_of_four_hanging": hanging, "ratio": ratio, "target": 0.9}


def summary(result):
    """The line printed after both runs."""
    healthy, hanging = result["healthy"], result["one_of_four_hanging"]
    return (
        f"isolation: {healthy['deliveries_per_s']:,.0f} deliveries/s to three answering destinations with all four answering, "
        f"{hanging['deliveries_per_s']:,.0f} with the fourth hanging: {result['ratio']:.0%} (target ≥ 90 %)"
    )


def report_section(result, postbacks=POSTBACKS):
    """The section appended to report.md."""
    healthy, hanging, ratio = result["healthy"], result["one_of_four_hanging"], result["ratio"]
    return [
        "",
        "## Delivery isolation: one of four destinations hanging",
        "",
        f"One dispatcher, four ad networks each with its own receiver, {postbacks:,} postbacks due for all four, "
        "interleaved. Deliveries per second to the three answering destinations, from the load until their last "
        "postback arrived; then the same with the fourth receiver holding every request past the delivery timeout.",
        "",
        "| | deliveries/s to the three answering | ratio |",
        "|---|---|---|",
        f"| all four answering | {healthy['deliveries_per_s']:,.0f} | 100 % |",
        f"| the fourth hanging | {hanging['deliveries_per_s']:,.0f} | {ratio:.0%} (target ≥ 90 %) |",
    ]


def main():
    bin_dir, out = sys.argv[1], os.path.abspath(sys.argv[2])
    use_binaries(bin_dir)
    result = isolation(run(bin_dir, out, hanging=False), run(bin_dir, out, hanging=True))
    with open(os.path.join(out, "isolation.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(summary(result))
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n".join(report_section(result)) + "\n")


if __name__ == "__main__":
    main()
