#!/usr/bin/env python3
"""Where a cold build's time goes, per target.

Usage: scripts/build_times.py [--rev REV] [--out FILE] [-- COMMAND ...]

Clones REV (default HEAD) of this repository into a new temporary folder (cold: no .build, packages
resolved from scratch), runs COMMAND there (default `swift build`; `scripts/demo.sh` measures the
main job's first run), and prints the command's wall time and, per target, the CPU seconds and the
wall seconds of its compile jobs, largest first. With --out, also writes the figures as JSON.

How: every swift-frontend job (through the driver's SWIFT_DRIVER_SWIFT_FRONTEND_EXEC) and every C
compile (through CC) runs under a small shell wrapper that logs its start, end, CPU time and the module
it builds. The wrapper costs a few milliseconds a job, the same for every commit measured. What no
wrapper sees (linking, package resolution, the manifest) is the wall time's remainder."""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLCHAIN_BIN = Path(shutil.which("swift-frontend") or "/opt/swift/usr/bin/swift-frontend").resolve().parent

# Logs one line per job: start, end, tool, module (swift) or output (C), children's user and system time.
WRAPPER = r"""#!/bin/bash
start=$EPOCHREALTIME
"$REAL" "$@"
rc=$?
end=$EPOCHREALTIME
module=-; output=-; previous=
for argument in "$@"; do
    case "$previous" in -module-name) module=$argument ;; -o) output=$argument ;; esac
    previous=$argument
done
times > "$BUILD_TIMES_LOG.$$"
{ read -r _; read -r user system; } < "$BUILD_TIMES_LOG.$$"
rm -f "$BUILD_TIMES_LOG.$$"
printf '%s %s %s %s %s %s %s\n' "$start" "$end" "$TOOL" "$module" "$output" "$user" "$system" >> "$BUILD_TIMES_LOG"
exit $rc
"""


def install_wrappers(folder: Path) -> dict[str, str]:
    """The wrappers, in a bin/ beside a lib/ that links to the toolchain's: the driver finds
    libSwiftScan relative to the frontend it runs, and without it scans modules another way."""
    bin_dir = folder / "usr" / "bin"
    bin_dir.mkdir(parents=True)
    (folder / "usr" / "lib").symlink_to(TOOLCHAIN_BIN.parent / "lib")
    (bin_dir / "wrap.sh").write_text(WRAPPER)
    for name, real, tool in (("swift-frontend", "swift-frontend", "swift"), ("cc", "clang", "cc")):
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\nREAL={TOOLCHAIN_BIN / real} TOOL={tool} . {bin_dir / "wrap.sh"} "$@"\n')
        path.chmod(0o755)
    return {"SWIFT_DRIVER_SWIFT_FRONTEND_EXEC": str(bin_dir / "swift-frontend"), "CC": str(bin_dir / "cc")}


def seconds(text: str) -> float:
    """bash's `times` format: 1m2.345s."""
    match = re.fullmatch(r"(\d+)m([\d.]+)s", text)
    return int(match.group(1)) * 60 + float(match.group(2)) if match else 0.0


def target_of(tool: str, module: str, output: str) -> str:
    if tool == "swift" and module != "-":
        return module
    match = re.search(r"/([^/]+)\.build/", output)
    if match:
        return match.group(1)
    return "(driver queries)" if tool == "swift" else "(other C)"


def summarise(log: Path) -> dict[str, dict[str, float]]:
    targets: dict[str, dict[str, float]] = collections.defaultdict(lambda: {"cpu": 0.0, "job_wall": 0.0, "jobs": 0})
    for line in log.read_text().splitlines() if log.exists() else []:
        fields = line.split(" ")
        if len(fields) != 7:
            continue
        start, end, tool, module, output, user, system = fields
        entry = targets[target_of(tool, module, output)]
        entry["cpu"] += seconds(user) + seconds(system)
        entry["job_wall"] += float(end) - float(start)
        entry["jobs"] += 1
    return dict(targets)


def report(wall: float, targets: dict[str, dict[str, float]]) -> str:
    total_cpu = sum(entry["cpu"] for entry in targets.values())
    lines = [
        f"wall {wall:.0f} s; compile jobs' CPU {total_cpu:.0f} s in {len(targets)} targets",
        "",
        "| target | CPU s | share | job wall s | jobs |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, entry in sorted(targets.items(), key=lambda item: -item[1]["cpu"]):
        share = entry["cpu"] / total_cpu * 100 if total_cpu else 0
        lines.append(f"| {name} | {entry['cpu']:.1f} | {share:.1f} % | {entry['job_wall']:.1f} | {entry['jobs']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD", help="the commit to clone and build (default HEAD)")
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("command", nargs="*", help="what to run in the clone (default: swift build)")
    arguments = parser.parse_args()
    command = arguments.command or ["swift", "build"]

    with tempfile.TemporaryDirectory(prefix="build-times-") as scratch:
        folder = Path(scratch)
        clone = folder / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", arguments.rev], check=True)
        log = folder / "jobs.log"
        environment = {**os.environ, **install_wrappers(folder / "wrappers"), "BUILD_TIMES_LOG": str(log)}
        started = time.monotonic()
        finished = subprocess.run(command, cwd=clone, env=environment)
        wall = time.monotonic() - started
        targets = summarise(log)
    print(report(wall, targets))
    if arguments.out:
        figures = {"rev": arguments.rev, "command": command, "wall": wall, "exit": finished.returncode}
        arguments.out.write_text(json.dumps({**figures, "targets": targets}, indent=2) + "\n")
    if finished.returncode != 0:
        print(f"the command exited with {finished.returncode}", file=sys.stderr)
    return finished.returncode


if __name__ == "__main__":
    sys.exit(main())
