#!/usr/bin/env python3
"""The benchmark run (scripts/bench.sh calls it with the release binaries): the machine's own limits
(openssl speed, redis-benchmark), then each stage alone on a preloaded stream, memory per held
postback, and resident memory per service, all in one run on a private Redis. Writes report.md,
report.json and chart.svg into the run directory.

Hold-and-fire is compared with RQ and arq (scripts/bench_peers.py). The last phase restarts the five
services with a day lasting a second and offers a campaign (impression, install, value update per
device), so that every service works: events/s through all five, CPU per process and Redis commands
per event, and the first-window postbacks received."""

import json, os, re, shutil, signal, subprocess, sys, tempfile, time, urllib.request
from harness import Processes, cpu_seconds, free_port, http, partitioned, redis_cli, rss_mib, until, wait_http

BIN = sys.argv[1]
OUT = os.path.abspath(sys.argv[2])
N = int(os.environ.get("BENCH_IMPRESSIONS", "20000"))
POSTBACKS = int(os.environ.get("BENCH_POSTBACKS", "10000"))
HELD = int(os.environ.get("BENCH_HELD", "1000000"))
os.makedirs(OUT, exist_ok=True)
children = Processes(OUT)


def redis(*args):
    return redis_cli(REDIS_PORT, *args)


def redis_counters():
    """Redis's CPU seconds (user + system) and commands processed so far."""
    cpu, stats = redis("INFO", "cpu"), redis("INFO", "stats")
    seconds = sum(float(re.search(rf"used_cpu_{kind}:([\d.]+)", cpu).group(1)) for kind in ("user", "sys"))
    return seconds, int(re.search(r"total_commands_processed:(\d+)", stats).group(1))




def xlen(stream):
    """XLEN summed over the stream's partitions."""
    return sum(int(redis("XLEN", name) or 0) for name in partitioned(stream))


def group_done(stream, group):
    """Every partition of `stream` read and acknowledged by `group`."""
    return all(partition_done(name, group) for name in partitioned(stream))


def partition_done(stream, group):
    info = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "--json", "XINFO", "GROUPS", stream], capture_output=True, text=True).stdout
    try:
        for entry in json.loads(info):
            if entry.get("name") == group:
                return entry.get("lag") == 0 and entry.get("pending") == 0
    except Exception:
        pass
    return False


results = {"machine": {"cpus": os.cpu_count()}}
try:
    # Reference limits.
    speed = subprocess.run(["openssl", "speed", "-seconds", "3", "ecdsap256"], capture_output=True, text=True).stdout
    match = re.search(r"256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", speed)
    results["openssl"] = {"sign_per_s": float(match.group(1)), "verify_per_s": float(match.group(2))}
    REDIS_PORT = free_port()
    redis_dir = tempfile.mkdtemp()
    children.start("redis", ["redis-server", "--port", str(REDIS_PORT), "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--dir", redis_dir])
    until(lambda: redis("PING") == "PONG", 10)
    bench = {}
    for pipeline in (1, 64):
        output = subprocess.run(
            ["redis-benchmark", "-p", str(REDIS_PORT), "-q", "-n", "200000", "-P", str(pipeline), "XADD", "bench", "*", "e", "v"],
            capture_output=True, text=True).stdout
        bench[f"xadd_per_s_pipeline_{pipeline}"] = float(re.findall(r"([\d.]+) requests per second", output)[-1])
    redis("DEL", "bench")
    results["redis_benchmark"] = bench

    # The pipeline's registry, through ingest's admin API.
    url = f"redis://127.0.0.1:{REDIS_PORT}/0"
    token = "bench-admin-token"
    keys = os.path.join(OUT, "keys")
    for name in ("network", "pipeline", "pipeline-development"):
        subprocess.run([f"{BIN}/attribution", "keygen", "--name", name, "--out", keys], check=True, capture_output=True)
    receiver_port, ingest_port = free_port(), free_port()
    common = {"REDIS_URL": url, "LOG_LEVEL": "warning", "HTTP_HOST": "127.0.0.1", "CONVERSION_SETTLE_MS": "0",
              "POSTBACK_URL_ALLOWLIST": "127.0.0.1", "STREAM_RETENTION_HOURS": "0"}
    children.start("ingest", [f"{BIN}/ingest"], {**common, "HTTP_PORT": str(ingest_port), "ADMIN_TOKEN": token})
    ingest = f"http://127.0.0.1:{ingest_port}"
    wait_http(ingest + "/health")
    network = "bench.adattributionkit"
    public_key = open(os.path.join(keys, "network.public.pem")).read()
    http("PUT", f"{ingest}/v1/admin/ad-networks/{network}", {"public-key": public_key, "postback-url": f"http://127.0.0.1:{receiver_port}/postbacks"}, token)
    http("PUT", f"{ingest}/v1/admin/publisher-apps/5838492", {"AdNetworkIdentifiers": [network]}, token)
    http("PUT", f"{ingest}/v1/admin/advertised-apps/1108187390", {}, token)

    def worker(name, env=None):
        return children.start(name, [f"{BIN}/{name}"], {**common, "HTTP_PORT": str(free_port()), **(env or {})})

    def load(kind, count, extra=()):
        subprocess.run([f"{BIN}/attribution", "bench-load", "--redis-url", url, "--kind", kind, "--count", str(count),
                        "--network", network, *extra], check=True, capture_output=True)

    # verifier: N signed impressions (and an install per 4) waiting on `events`.
    load("impressions", N, ["--key-file", os.path.join(keys, "network.private.pem")])
    events = xlen("events")
    started = time.time()
    verifier = worker("verifier")
    until(lambda: group_done("events", "verifier"))
    wall = time.time() - started
    cpu = cpu_seconds(verifier.pid)
    results["verifier"] = {"events": events, "impressions": N, "wall_s": wall, "cpu_s": cpu,
                           "impressions_per_cpu_s": N / cpu, "ratio_to_openssl_verify": N / cpu / results["openssl"]["verify_per_s"],
                           "rejected": xlen("rejected")}

    # attribution-winner: the verified impressions and installs.
    installs = events - N
    started = time.time()
    winner = worker("attribution-winner")
    until(lambda: group_done("verified", "attribution-winner") and group_done("winner:settled", "attribution-winner"))
    wall = time.time() - started
    results["attribution_winner"] = {"messages": events, "conversions": installs, "wall_s": wall, "cpu_s": cpu_seconds(winner.pid),
                                     "messages_per_s": events / wall, "conversions_per_s": installs / wall,
                                     "attributions": xlen("attributions")}

    # scheduler: the attributed conversions become plans with window timers.
    started = time.time()
    scheduler = worker("scheduler", {"CROWD_TIER_THRESHOLDS": "1,1,1"})
    until(lambda: group_done("attributions", "scheduler"))
    wall = time.time() - started
    results["scheduler"] = {"conversions": installs, "wall_s": wall, "cpu_s": cpu_seconds(scheduler.pid), "plans_per_s": installs / wall}

    # dispatcher: due postbacks to a local receiver (keep-alive HTTP; the receiver verifies each one).
    # The dispatcher starts first so its key is in the JWKS before the receiver fetches it; the
    # postbacks are loaded once both are up, and the clock starts then.
    dispatcher = worker("dispatcher", {"SIGNING_KEY_FILE": os.path.join(keys, "pipeline.private.pem"),
                                      "DEVELOPMENT_SIGNING_KEY_FILE": os.path.join(keys, "pipeline-development.private.pem")})
    until(lambda: "attribution-pipeline/0" in urllib.request.urlopen(f"{ingest}/.well-known/jwks.json").read().decode(), 30)
    children.start("receiver", [f"{BIN}/attribution", "receiver", "--port", str(receiver_port), "--jwks-url", f"{ingest}/.well-known/jwks.json",
                       "--output", os.path.join(OUT, "postbacks.jsonl"), "--log-level", "warning"])
    wait_http(f"http://127.0.0.1:{receiver_port}/health")
    time.sleep(1)
    cpu_before = cpu_seconds(dispatcher.pid)
    started = time.time()
    load("postbacks", POSTBACKS)
    until(lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats").get("accepted", 0) >= POSTBACKS)
    wall = time.time() - started
    results["dispatcher"] = {"postbacks": POSTBACKS, "wall_s": wall, "cpu_s": cpu_seconds(dispatcher.pid) - cpu_before,
                             "deliveries_per_s": POSTBACKS / wall, "receiver_stats": http("GET", f"http://127.0.0.1:{receiver_port}/stats")}

    # Hold-and-fire, ours and the peers' (same Redis, same verifying receiver): N deliveries all due
    # 2 s ahead; deliveries per second from that moment until the receiver has the last one.
    held = int(os.environ.get("BENCH_HOLD_AND_FIRE", "3000"))
    base = http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"]
    loaded = json.loads(subprocess.run([f"{BIN}/attribution", "bench-load", "--redis-url", url, "--kind", "held", "--count", str(held),
                                        "--network", network], capture_output=True, text=True, check=True).stdout)
    due = loaded["loaded-at"] / 1000 + 2
    until(lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] >= base + held)
    results["hold_and_fire"] = {"ours": {"deliveries": held, "seconds_after_due": time.time() - due, "per_s": held / max(0.001, time.time() - due)}}
    venv = os.path.join(OUT, "venv")
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "rq", "arq", "httpx", "cryptography"], check=True,
                       capture_output=True, timeout=600)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_peers
        bench_peers.run_peers(venv, OUT, url, f"http://127.0.0.1:{receiver_port}",
                              open(os.path.join(keys, "pipeline.private.pem")).read(), "attribution-pipeline/0", network,
                              1108187390, held, results["hold_and_fire"])
    except Exception as error:  # no network for PyPI, a peer that failed: reported, not fatal
        results["hold_and_fire"]["peers_error"] = str(error)

    # End to end (ingest → verifier → attribution-winner, all running): ingest latency at a fixed
    # offered rate, then a saturating offer, timed until attribution-winner has consumed everything;
    # CPU per process and Redis commands per event over that run.
    def load_run(rate, seconds):
        output = subprocess.run([f"{BIN}/attribution", "load", "--ingest-url", ingest, "--rate", str(rate), "--duration", str(seconds),
                                 "--network", network, "--key-file", os.path.join(keys, "network.private.pem")],
                                capture_output=True, text=True, check=True).stdout
        return json.loads(output.strip().splitlines()[-1])

    results["ingest_latency"] = load_run(int(os.environ.get("BENCH_LATENCY_RATE", "500")), 10)
    until(lambda: group_done("verified", "attribution-winner"))
    processes = {"ingest": children.running["ingest"], "verifier": verifier, "attribution-winner": winner}
    cpu_before = {name: cpu_seconds(p.pid) for name, p in processes.items()}
    redis_cpu_before, commands_before = redis_counters()
    started = time.time()
    offered = load_run(int(os.environ.get("BENCH_SATURATION_RATE", "4000")), 10)
    until(lambda: group_done("events", "verifier") and group_done("verified", "attribution-winner"))
    wall = time.time() - started
    redis_cpu_after, commands_after = redis_counters()
    redis_cpu, commands = redis_cpu_after - redis_cpu_before, commands_after - commands_before
    results["end_to_end"] = {
        "path": "ingest → verifier → attribution-winner (impressions)", "offered": offered, "accepted": offered["accepted"],
        "wall_s": wall, "sustained_per_s": offered["accepted"] / wall,
        "cpu_s": {**{name: cpu_seconds(p.pid) - cpu_before[name] for name, p in processes.items()}, "redis": redis_cpu},
        "redis_commands_per_event": commands / max(1, offered["accepted"]),
    }

    # All five services: restarted with a day lasting a second (windows and delays play out in the
    # run), offered a campaign at a saturating rate. Sustained events/s counts until the scheduler has
    # every conversion's plan; then the first-window postbacks (due 1–2 scaled days after the window's
    # end, 2 days after the install) arrive at the receiver.
    five = {"ingest": children.running["ingest"], "verifier": verifier, "attribution-winner": winner, "scheduler": scheduler, "dispatcher": dispatcher}
    for process in five.values():
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    scaled = {"TIME_SCALE": "86400", "CONVERSION_SETTLE_MS": "250", "WINDOW_CLOSE_GRACE_MS": "400", "CROWD_TIER_THRESHOLDS": "1,1,1"}
    five["ingest"] = children.start("ingest", [f"{BIN}/ingest"], {**common, **scaled, "HTTP_PORT": str(ingest_port), "ADMIN_TOKEN": token})
    wait_http(ingest + "/health")
    five["verifier"] = worker("verifier", scaled)
    five["attribution-winner"] = worker("attribution-winner", scaled)
    five["scheduler"] = worker("scheduler", scaled)
    five["dispatcher"] = worker("dispatcher", {**scaled, "SIGNING_KEY_FILE": os.path.join(keys, "pipeline.private.pem"),
                                              "DEVELOPMENT_SIGNING_KEY_FILE": os.path.join(keys, "pipeline-development.private.pem")})
    app_key = http("POST", f"{ingest}/v1/admin/advertised-apps/1108187390/keys", {}, token)["app-key"]
    time.sleep(2)
    received_before = http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"]
    attributions_before = xlen("attributions")
    cpu_before = {name: cpu_seconds(p.pid) for name, p in five.items()}
    redis_cpu_before, commands_before = redis_counters()
    started = time.time()
    output = subprocess.run([f"{BIN}/attribution", "load", "--ingest-url", ingest, "--rate", os.environ.get("BENCH_CAMPAIGN_RATE", "3000"),
                             "--duration", "10", "--network", network, "--key-file", os.path.join(keys, "network.private.pem"),
                             "--app-key", app_key], capture_output=True, text=True, check=True).stdout
    offered = json.loads(output.strip().splitlines()[-1])
    until(lambda: all(group_done(stream, group) for stream, group in
                      [("events", "verifier"), ("verified", "attribution-winner"), ("winner:settled", "attribution-winner"),
                       ("attributions", "scheduler")]) and all(redis("ZCARD", name + ":due") == "0" for name in partitioned("winner:settling")))
    planned_s = time.time() - started
    messages = xlen("attributions") - attributions_before
    installs = offered["accepted"] // 3  # every third request is an install, each with its impression
    until(lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] - received_before >= installs, 60)
    wall = time.time() - started
    received = http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] - received_before
    redis_cpu_after, commands_after = redis_counters()
    redis_cpu, commands = redis_cpu_after - redis_cpu_before, commands_after - commands_before
    results["five_services"] = {
        "offered": offered, "accepted": offered["accepted"], "planned_s": planned_s, "sustained_per_s": offered["accepted"] / planned_s,
        "attributions": messages, "installs": installs, "postbacks_received": received, "wall_s": wall,
        "cpu_s": {**{name: cpu_seconds(p.pid) - cpu_before[name] for name, p in five.items()}, "redis": redis_cpu},
        "redis_commands_per_event": commands / max(1, offered["accepted"]),
    }
    verifier, winner, scheduler, dispatcher = five["verifier"], five["attribution-winner"], five["scheduler"], five["dispatcher"]

    # Resident memory of each service after its run.
    results["rss_mib"] = {name: rss_mib(process.pid) for name, process in
                          [("ingest", children.running["ingest"]), ("verifier", verifier), ("attribution-winner", winner), ("scheduler", scheduler), ("dispatcher", dispatcher)]}

    # Held postbacks: Redis bytes each, with HELD held, and hold/release rates.
    holding = subprocess.run([f"{BIN}/attribution", "bench-holding", "--redis-url", url, "--count", str(HELD), "--comparison-count", "100000", "--json"],
                             capture_output=True, text=True, check=True).stdout
    results["holding"] = json.loads(holding)
finally:
    children.stop_all()

def hold_and_fire_line(figures):
    ours = figures["ours"]["per_s"]
    text = f"Hold-and-fire ({figures['ours']['deliveries']:,} deliveries due at once, POSTed to the verifying receiver): ours {ours:,.0f}/s"
    peers = {name: value for name, value in figures.items() if name not in ("ours", "peers_error")}
    for name, value in peers.items():
        text += f"; {name} {value['per_s']:,.0f}/s (ours is {ours / value['per_s']:.1f}×)"
    if "peers_error" in figures:
        text += f"; peers not measured: {figures['peers_error'][:200]}"
    if peers:
        text += f". Target: 3× the fastest peer ({ours / max(v['per_s'] for v in peers.values()):.1f}× here)."
    return text if text.endswith(".") else text + "."


def five_services_line(f):
    return (f"All five services (a campaign: impression, install and value update per device, a day lasting a second): "
            f"**{f['sustained_per_s']:,.0f} events/s sustained** ({f['accepted']:,} accepted at an offered {f['offered']['offeredPerSecond']:,}/s, "
            f"every conversion planned by the scheduler after {f['planned_s']:.1f} s; {f['attributions']:,} messages on attributions); "
            f"{f['postbacks_received']:,} postbacks signed, delivered and verified by {f['wall_s']:.1f} s (one first-window postback per install: "
            f"{f['installs']:,}). CPU seconds: "
            + ", ".join(f"{k} {v:.1f}" for k, v in f["cpu_s"].items())
            + f"; Redis commands per event: {f['redis_commands_per_event']:.1f}.")


# The report.
o, v, w, s, d, h = results["openssl"], results["verifier"], results["attribution_winner"], results["scheduler"], results["dispatcher"], results["holding"]
rb = results["redis_benchmark"]
lines = [
    "# Benchmark", "",
    f"One run on this machine ({results['machine']['cpus']} CPUs), private Redis with AOF (everysec).", "",
    "| figure | measured | reference | ratio |", "|---|---|---|---|",
    f"| verifier impressions per CPU-second | {v['impressions_per_cpu_s']:,.0f} | openssl ECDSA P-256 verify/s (1 core): {o['verify_per_s']:,.0f} | {v['ratio_to_openssl_verify']:.0%} |",
    f"| attribution-winner messages/s (conversions/s) | {w['messages_per_s']:,.0f} ({w['conversions_per_s']:,.0f}) | redis-benchmark XADD/s unpipelined: {rb['xadd_per_s_pipeline_1']:,.0f} | {w['messages_per_s'] / rb['xadd_per_s_pipeline_1']:.0%} |",
    f"| scheduler plans/s | {s['plans_per_s']:,.0f} | redis-benchmark XADD/s pipelined (64): {rb['xadd_per_s_pipeline_64']:,.0f} | {s['plans_per_s'] / rb['xadd_per_s_pipeline_64']:.1%} |",
    f"| postbacks held/s, released/s | {h['scheduledPerSecond']:,.0f}, {h['releasedPerSecond']:,.0f} | redis-benchmark XADD/s pipelined (64): {rb['xadd_per_s_pipeline_64']:,.0f} | {h['releasedPerSecond'] / rb['xadd_per_s_pipeline_64']:.0%} (release) |",
    f"| dispatcher deliveries/s (local receiver, verifying) | {d['deliveries_per_s']:,.0f} | openssl ECDSA P-256 sign/s (1 core): {o['sign_per_s']:,.0f} | {d['deliveries_per_s'] / o['sign_per_s']:.0%} |",
    f"| Redis bytes per held postback ({h['held']:,} held) | {h['compactBytesPerHeld']:.1f} | target ≤ 300; JSON layout: {h['jsonLayoutBytesPerHeld']:.1f} | {h['compactBytesPerHeld'] / 300:.0%} of target |",
    "",
    f"End to end ({results['end_to_end']['path']}): **{results['end_to_end']['sustained_per_s']:,.0f} impressions/s sustained** "
    f"({results['end_to_end']['accepted']:,} accepted at an offered {results['end_to_end']['offered']['offeredPerSecond']:,}/s, all consumed in "
    f"{results['end_to_end']['wall_s']:.1f} s); CPU seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in results['end_to_end']['cpu_s'].items())
    + f"; Redis commands per event: {results['end_to_end']['redis_commands_per_event']:.1f}.",
    "",
    f"Ingest latency at {results['ingest_latency']['offeredPerSecond']}/s offered (open loop, from each request's due time, every sample): "
    f"p50 {results['ingest_latency']['p50Milliseconds']:.1f} ms, p99 {results['ingest_latency']['p99Milliseconds']:.1f} ms, "
    f"p99.9 {results['ingest_latency']['p999Milliseconds']:.1f} ms, max {results['ingest_latency']['maxMilliseconds']:.1f} ms "
    f"({results['ingest_latency']['accepted']:,} accepted, {results['ingest_latency']['failed']} failed).",
    "", hold_and_fire_line(results["hold_and_fire"]),
    "", "Resident memory after the run (MiB): " + ", ".join(f"{k} {v:.0f}" for k, v in results["rss_mib"].items()) + ".", "",
    five_services_line(results["five_services"]),
]
open(os.path.join(OUT, "report.md"), "w").write("\n".join(lines) + "\n")
open(os.path.join(OUT, "report.json"), "w").write(json.dumps(results, indent=2) + "\n")
bars = [("verifier vs openssl verify", v["ratio_to_openssl_verify"]),
        ("winner vs XADD unpipelined", w["messages_per_s"] / rb["xadd_per_s_pipeline_1"]),
        ("release vs XADD pipelined", h["releasedPerSecond"] / rb["xadd_per_s_pipeline_64"]),
        ("dispatcher vs openssl sign", d["deliveries_per_s"] / o["sign_per_s"]),
        ("bytes/held vs 300 target", h["compactBytesPerHeld"] / 300)]
width, row = 640, 34
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(bars) + 40}" font-family="sans-serif" font-size="13">',
       '<text x="10" y="20" font-weight="bold">Measured / reference (same run)</text>']
for i, (label, ratio) in enumerate(bars):
    y = 34 + i * row
    length = max(1, min(380, ratio * 380))
    svg += [f'<text x="10" y="{y + 16}">{label}</text>',
            f'<rect x="220" y="{y + 4}" width="{length:.0f}" height="18" fill="#4a7bd0"/>',
            f'<text x="{225 + length:.0f}" y="{y + 17}">{ratio:.0%}</text>']
svg.append("</svg>")
open(os.path.join(OUT, "chart.svg"), "w").write("\n".join(svg) + "\n")
print("\n".join(lines))
print(f"\nreport: {OUT}/report.md, report.json, chart.svg")
