#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers with libFuzzer and AddressSanitizer: builds the Fuzz/ package
# (its own build path, .build-fuzz, so the normal .build is never touched), runs each target for N
# seconds on a scratch copy of its committed seeds under run/fuzz-<time>/, and prints per target the
# executions, executions per second, coverage, corpus size and crashes. Exits 1 if any target crashed;
# the crashing input is in run/fuzz-<time>/<target>/, and `<binary> <input>` replays it.
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]     (default: 60 s each for fuzz-jws, fuzz-skan, fuzz-plist)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

PER_TARGET=60
TARGETS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) PER_TARGET=$2; shift 2 ;;
        fuzz-*) TARGETS+=("$1"); shift ;;
        *) echo "usage: scripts/fuzz.sh [--seconds N] [fuzz-jws|fuzz-skan|fuzz-plist ...]" >&2; exit 2 ;;
    esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz-jws fuzz-skan fuzz-plist)

ensure_system_packages
# Every Swift module gets the instrumentation, the code under test as much as the harness; release,
# because an unoptimised harness runs an order of magnitude fewer inputs.
BUILD=(swift build --package-path Fuzz --build-path .build-fuzz -c release -Xswiftc -sanitize=fuzzer,address)
RUN="$(pwd)/run/fuzz-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$RUN"
echo "==> ${BUILD[*]}"
if ! "${BUILD[@]}" >"$RUN/build.log" 2>&1; then
    grep -Ev "Cannot export local symbol '__asan_extra_spill_area'" "$RUN/build.log" | tail -30
    exit 1
fi
tail -1 "$RUN/build.log"
BIN="$("${BUILD[@]}" --show-bin-path)"
# Leak checks stay off: LeakSanitizer counts the harness's lazily built statics (keys, decoders) as
# leaks of the first input, and Foundation's PropertyListSerialization leaks a CFError per refused plist.
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
# Swift's own crash backtracer would take the trap first (and for up to 30 s): libFuzzer must see it to
# save the input.
export SWIFT_BACKTRACE=enable=no

failed=0
printf '%-11s %12s %8s %6s %6s %7s %8s\n' target executions exec/s cov ft corpus crashes >"$RUN/summary.txt"
for target in "${TARGETS[@]}"; do
    dir="$RUN/$target"
    mkdir -p "$dir/corpus"
    cp Fuzz/Corpus/"$target"/* "$dir/corpus/"
    dict=()
    [ -f "Fuzz/Dictionaries/$target.dict" ] && dict=(-dict="Fuzz/Dictionaries/$target.dict")
    echo "==> $target: ${PER_TARGET}s on $(ls "$dir/corpus" | wc -l) seeds (log: $dir/fuzz.log)"
    status=0
    "$BIN/$target" -max_total_time="$PER_TARGET" -print_final_stats=1 -timeout=10 -max_len=8192 \
        -artifact_prefix="$dir/" "${dict[@]}" "$dir/corpus" >"$dir/fuzz.log" 2>&1 || status=$?
    # libFuzzer's last status line ("#N DONE cov: C ft: F corp: ...") and its final stats.
    last=$(grep -E '^#[0-9]+' "$dir/fuzz.log" | tail -1 || true)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$dir/fuzz.log" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$dir/fuzz.log" | tail -1)
    corpus=$(ls "$dir/corpus" | wc -l)
    crashes=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
        -o -name 'leak-*' \) | wc -l)
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="?"; fi
    printf '%-11s %12s %8s %6s %6s %7s %8s\n' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
        "$corpus" "$crashes" >>"$RUN/summary.txt"
    if [ "$status" -ne 0 ]; then
        failed=1
        echo "    $target failed (exit $status):"
        grep -E 'ERROR|Fatal error|SUMMARY|Test unit written' "$dir/fuzz.log" | head -5 | sed 's/^/    /'
    fi
done
echo
cat "$RUN/summary.txt"
echo "(cov: instrumented edges reached; ft: libFuzzer features; corpus: inputs kept, seeds included)"
exit "$failed"
