#!/usr/bin/env python3
"""Records a benchmark run (scripts/bench.sh calls it last): appends the run's headline figures to the
committed data file docs/benchmarks/runs.csv, redraws docs/benchmarks/ratios.svg from every row of it,
and replaces the latest-run section of docs/benchmarks.md with the run's report. The report is kept
whole (every figure beside the machine's own limits); the data file keeps, per run, the figures a trend
is read from.

  bench_record.py OUT [--docs DIR]

OUT is the run's directory (report.json, report.md and, when their parts ran, scale.json,
isolation.json, rtt.json); DIR the docs folder (default: docs beside this script's folder)."""

import argparse
import csv
import json
import os
import re
import subprocess
import time

# The latest-run section of docs/benchmarks.md lies between these two lines.
BEGIN = "<!-- latest run: written by scripts/bench_record.py -->"
END = "<!-- end of latest run -->"

# Columns of runs.csv, in order: when and where, the machine's own limits, then each figure and its ratio.
COLUMNS = [
    "date",
    "revision",
    "cpus",
    "kernel",
    "openssl_sign_per_s",
    "openssl_verify_per_s",
    "xadd_per_s_unpipelined",
    "xadd_per_s_pipelined_64",
    "verifier_impressions_per_cpu_s",
    "verifier_to_openssl_verify",
    "winner_messages_per_s",
    "winner_to_xadd_unpipelined",
    "scheduler_plans_per_s",
    "scheduler_to_xadd_pipelined",
    "released_per_s",
    "released_to_xadd_pipelined",
    "dispatcher_deliveries_per_s",
    "dispatcher_to_openssl_sign",
    "bytes_per_held_postback",
    "capacity_single_events_per_s",
    "capacity_batches_per_s",
    "capacity_all_five_per_s",
    "all_five_to_openssl_verify",
    "cluster_to_single",
    "isolation_one_of_four_hanging",
    "rtt_1ms_ingest",
    "rtt_1ms_verifier",
    "rtt_1ms_attribution_winner",
    "rtt_1ms_scheduler",
    "rtt_1ms_dispatcher",
    "tls_ingest",
    "tls_verifier",
    "tls_attribution_winner",
    "tls_scheduler",
    "tls_dispatcher",
    "tls_lowest_of_five",
]

# The ratios the chart draws, each a line over the runs: (column, label, colour).
CHARTED = [
    ("verifier_to_openssl_verify", "verifier / openssl verify (per CPU-second)", "#4a7bd0"),
    ("dispatcher_to_openssl_sign", "dispatcher / openssl sign", "#d0694a"),
    ("all_five_to_openssl_verify", "all five services' capacity / openssl verify", "#3a9d5d"),
    ("isolation_one_of_four_hanging", "deliveries with one of four destinations hanging", "#8a5cc2"),
    ("rtt_1ms_attribution_winner", "attribution-winner at +1 ms to Redis", "#c2a01f"),
    ("tls_lowest_of_five", "the lowest of the five services over TLS to Redis", "#2a9aa8"),
]


def read_json(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def revision(root):
    """The commit the run measured, with `+` when the working tree had changes."""
    head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"], capture_output=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def headline(report, scale=None, isolation=None, rtt=None, date=None, commit="unknown"):
    """One row of runs.csv from a run's parts (bench.py's report.json; bench_scale's, bench_isolation's
    and bench_rtt's files where they ran; a part that did not run leaves its columns empty)."""
    o, rb = report["openssl"], report["redis_benchmark"]
    v, w, s = report["verifier"], report["attribution_winner"], report["scheduler"]
    d, h = report["dispatcher"], report["holding"]
    e2e, five = report["end_to_end"], report["five_services"]
    row = {
        "date": date or time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "revision": commit,
        "cpus": report["machine"]["cpus"],
        "kernel": report["machine"]["kernel"],
        "openssl_sign_per_s": round(o["sign_per_s"]),
        "openssl_verify_per_s": round(o["verify_per_s"]),
        "xadd_per_s_unpipelined": round(rb["xadd_per_s_pipeline_1"]),
        "xadd_per_s_pipelined_64": round(rb["xadd_per_s_pipeline_64"]),
        "verifier_impressions_per_cpu_s": round(v["impressions_per_cpu_s"]),
        "verifier_to_openssl_verify": v["ratio_to_openssl_verify"],
        "winner_messages_per_s": round(w["messages_per_s"]),
        "winner_to_xadd_unpipelined": w["messages_per_s"] / rb["xadd_per_s_pipeline_1"],
        "scheduler_plans_per_s": round(s["plans_per_s"]),
        "scheduler_to_xadd_pipelined": s["plans_per_s"] / rb["xadd_per_s_pipeline_64"],
        "released_per_s": round(h["releasedPerSecond"]),
        "released_to_xadd_pipelined": h["releasedPerSecond"] / rb["xadd_per_s_pipeline_64"],
        "dispatcher_deliveries_per_s": round(d["deliveries_per_s"]),
        "dispatcher_to_openssl_sign": d["deliveries_per_s"] / o["sign_per_s"],
        "bytes_per_held_postback": f"{h['compactBytesPerHeld']:.1f}",
        "capacity_single_events_per_s": e2e["single"]["capacity_per_s"],
        "capacity_batches_per_s": e2e["batch"]["capacity_per_s"],
        "capacity_all_five_per_s": five["capacity_per_s"],
        "all_five_to_openssl_verify": five["capacity_per_s"] / o["verify_per_s"],
    }
    if scale and "single" in scale and "cluster" in scale:
        row["cluster_to_single"] = scale["cluster"]["sustained_per_s"] / scale["single"]["sustained_per_s"]
    if isolation:
        row["isolation_one_of_four_hanging"] = isolation["ratio"]
    if rtt and "+1 ms" in rtt.get("ratios", {}):
        for service, ratio in rtt["ratios"]["+1 ms"].items():
            row["rtt_1ms_" + service.replace("-", "_")] = ratio
    if rtt and "TLS" in rtt.get("ratios", {}):
        for service, ratio in rtt["ratios"]["TLS"].items():
            row["tls_" + service.replace("-", "_")] = ratio
        row["tls_lowest_of_five"] = min(rtt["ratios"]["TLS"].values())
    return {column: format_cell(row.get(column)) for column in COLUMNS}


def format_cell(value):
    """Ratios with three decimals, other numbers as they are, a missing figure empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def append_row(path, row):
    """Appends `row` to the CSV at `path`, writing the header first when the file is new. A file written
    before columns were added is rewritten under the current header first, its rows' new cells empty; a
    file with a column this script does not know is refused rather than losing it."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        if header != COLUMNS:
            unknown = [column for column in header if column not in COLUMNS]
            if unknown:
                raise SystemExit(f"{path} has columns this script does not know: {', '.join(unknown)}")
            rows = read_rows(path)
            with open(path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
                writer.writeheader()
                writer.writerows(rows)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(row)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def chart(rows, width=720, plot_h=200):
    """An SVG of the charted ratios over the recorded runs (oldest left), 0–150 % on one axis; a run
    missing a figure leaves a gap in that line. The legend goes under the plot."""
    left, right, top, bottom = 50, 20, 30, 40 + 18 * len(CHARTED)
    plot_w = width - left - right
    top_value = 1.5
    step = plot_w / max(1, len(rows) - 1)

    def x(i):
        return left + (i * step if len(rows) > 1 else plot_w / 2)

    def y(value):
        return top + plot_h * (1 - min(value, top_value) / top_value)

    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + plot_h + bottom}" '
        'font-family="sans-serif" font-size="12">',
        '<text x="10" y="18" font-weight="bold">Ratios to the machine\'s own limits, per recorded run</text>',
    ]
    for tick in (0, 0.5, 1.0, 1.5):
        svg.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.0%}</text>')
    for i, row in enumerate(rows):
        svg.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{row["date"][:10]} {row["revision"]}</text>'
        )
    for n, (column, label, colour) in enumerate(CHARTED):
        segments, current = [], []
        for i, row in enumerate(rows):
            if row.get(column):
                current.append(f"{x(i):.1f},{y(float(row[column])):.1f}")
            elif current:
                segments.append(current)
                current = []
        if current:
            segments.append(current)
        for points in segments:
            if len(points) > 1:
                svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(points)}"/>')
            for point in points:
                px, py = point.split(",")
                svg.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{colour}"/>')
        legend_y = top + plot_h + 36 + 18 * n
        svg.append(f'<rect x="{left}" y="{legend_y - 10}" width="12" height="12" fill="{colour}"/>')
        svg.append(f'<text x="{left + 18}" y="{legend_y}">{label}</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def latest_section(report_md, row):
    """The run's report as the latest-run section: its headings one level down, and a first line saying
    which commit and machine it measured."""
    body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", report_md.strip(), flags=re.MULTILINE)
    body = re.sub(r"^## Benchmark\n", "", body).strip()
    intro = (
        f"Run of {row['date']} UTC at commit `{row['revision']}` on {row['cpus']} CPUs (Linux {row['kernel']}): "
        f"openssl ECDSA P-256 {float(row['openssl_sign_per_s']):,.0f} signs/s and "
        f"{float(row['openssl_verify_per_s']):,.0f} verifies/s on one core; redis-benchmark XADD "
        f"{float(row['xadd_per_s_unpipelined']):,.0f}/s unpipelined, {float(row['xadd_per_s_pipelined_64']):,.0f}/s "
        "pipelined by 64."
    )
    return f"{BEGIN}\n\n{intro}\n\n{body}\n\n{END}"


def replace_latest(document, section):
    """`document` with the text between the markers replaced by `section` (which carries them)."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"docs/benchmarks.md has no latest-run markers ({BEGIN} … {END})")
    return document[:start] + section + document[end + len(END) :]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Record a benchmark run in docs/benchmarks.")
    parser.add_argument("out", help="the run's directory")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--docs", default=os.path.join(root, "docs"), help="the docs folder")
    args = parser.parse_args(argv)
    report = read_json(args.out, "report.json")
    if report is None:
        raise SystemExit(f"{args.out}/report.json is missing: record a complete run of scripts/bench.sh")
    row = headline(
        report,
        read_json(args.out, "scale.json"),
        read_json(args.out, "isolation.json"),
        read_json(args.out, "rtt.json"),
        commit=revision(root),
    )
    data = os.path.join(args.docs, "benchmarks")
    os.makedirs(data, exist_ok=True)
    append_row(os.path.join(data, "runs.csv"), row)
    with open(os.path.join(data, "ratios.svg"), "w") as f:
        f.write(chart(read_rows(os.path.join(data, "runs.csv"))))
    document_path = os.path.join(args.docs, "benchmarks.md")
    with open(document_path) as f:
        document = f.read()
    with open(os.path.join(args.out, "report.md")) as f:
        section = latest_section(f.read(), row)
    with open(document_path, "w") as f:
        f.write(replace_latest(document, section))
    print(
        f"recorded: {data}/runs.csv (row {len(read_rows(os.path.join(data, 'runs.csv')))}), ratios.svg, benchmarks.md"
    )


if __name__ == "__main__":
    main()
