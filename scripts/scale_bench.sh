#!/usr/bin/env bash
# Scale benchmark for docs/PERFORMANCE.md ("Scale"): synthesizes GPT-3 175B
# traces into a temporary directory, times lumos on them, deletes them.
#
#   scripts/scale_bench.sh [--repeat N] [--sizes 100M,1G,4G] [--jobs 64,512]
#                          [--no-hta] [--hta-python PY] [--out DIR]
#   scripts/scale_bench.sh --report DIR      # reprint the tables of a run
#
# 1. Single rank: rank 0 (pipeline stage 0) of GPT-3 175B, TP8 PP4 DP8 on
#    H100, 2 profiled steps, 25 / 256 / 1024 micro-batches per step: about
#    100 MB / 1 GB / 4 GB of JSON, as plain .json and .json.gz. For each,
#    `lumos replay --json FILE` under /usr/bin/time -v (wall time and peak
#    RSS of the whole command), N times; then once `scale single FILE`
#    (crates/cli/examples/scale.rs), which times reading, graph building
#    and simulation separately and counts what the trace and graph hold.
# 2. Jobs: GPT-3 175B, TP8 PP2 DP4 (64 ranks, 4 micro-batches) and TP8 PP4
#    DP16 (512 ranks, 8 micro-batches), 2 steps, every rank written by
#    `lumos synth --ranks all` (gzip). For each: `scale job
#    --representatives DIR` (every rank read and built, one rank per group
#    of ranks with the same communication program kept and replayed
#    jointly), `scale job DIR` (every rank read, built, merged and replayed
#    jointly, per stage) and `lumos replay --job --json DIR`, under
#    /usr/bin/time -v.
# 3. HTA: scripts/hta_compare.py on the ~100 MB and ~1 GB files and the
#    64-rank job, when a Python with `hta` (PyPI: traceinsight) is given by
#    --hta-python, $HTA_PYTHON, or found at /tmp/hta-venv/bin/python.
#
# A run that would not fit is skipped and says why (disk: free space in the
# temp dir against the files it writes; memory: MemAvailable against an
# estimate). Results: one JSON object per run in DIR/results.jsonl (DIR: a
# new temp dir unless --out), then the tables.
set -euo pipefail

REPEAT=3
SIZES=100M,1G,4G
JOBS=64,512
HTA=1
HTA_PY=${HTA_PYTHON:-}
OUT=
while [ $# -gt 0 ]; do
    case "$1" in
    --repeat) REPEAT=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --no-hta) HTA=; shift ;;
    --hta-python) HTA_PY=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --report) python3 "$(dirname "$0")/scale_report.py" report "$2/results.jsonl"; exit 0 ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HELP=$ROOT/scripts/scale_report.py

if [ ! -x /usr/bin/time ]; then
    echo "== /usr/bin/time is missing: installing the Debian package 'time' (apt-get install -y time)"
    apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi

# If memory runs out, let the kernel kill this benchmark first, not
# whatever else runs on the machine.
echo 1000 >/proc/self/oom_score_adj 2>/dev/null || true

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lumos-scale.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/lumos-scale-results.XXXXXX")}
mkdir -p "$OUT"
RES=$OUT/results.jsonl
: >"$RES"

echo "== machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== traces in $WORK (deleted at exit); results in $RES"
df -h "$WORK" | sed 's/^/   /'

cargo build --release -p lumos --bin lumos --example scale 2>&1 | tail -1
LUMOS=$ROOT/target/release/lumos
SCALE=$ROOT/target/release/examples/scale

avail_bytes() { df --output=avail -B1 "$WORK" | tail -1; }
mem_avail_mb() { awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo; }
skip() { # WHAT WHY
    echo "   SKIPPED $1: $2"
    python3 -c 'import json, sys; print(json.dumps({"kind": "skip", "what": sys.argv[1], "why": sys.argv[2]}))' "$1" "$2" >>"$RES"
}
# Runs a command under /usr/bin/time -v, stdout to $TIMED_OUT (default
# /dev/null); prints "wall_s cpu_s rss_mb exit_code".
timed() {
    local rc=0
    /usr/bin/time -v -o "$WORK/time.log" "$@" >"${TIMED_OUT:-/dev/null}" 2>"$WORK/stderr.log" || rc=$?
    python3 "$HELP" time "$WORK/time.log" "$rc"
}

# ---------------------------------------------------------------- single rank
HTA_INPUTS=()
for size in ${SIZES//,/ }; do
    case $size in
    100M) m=25 ;; 1G) m=256 ;; 4G) m=1024 ;;
    *) echo "unknown size $size (100M, 1G or 4G)" >&2; exit 2 ;;
    esac
    # 2 steps x (1.23 MB + 1.96 MB per micro-batch) of JSON, plus gzip
    # (about a seventh) and 10%.
    need=$(python3 -c "print(int(2 * (1.23e6 + 1.959e6 * $m) * 1.25))")
    if [ "$(avail_bytes)" -lt "$need" ]; then
        skip "single rank $size" "needs $((need / 1000000)) MB free in $WORK, $(($(avail_bytes) / 1000000)) MB available"
        continue
    fi
    f=$WORK/gpt3-175b-tp8pp4dp8-rank0-mb$m.json
    echo "== single rank $size: GPT-3 175B TP8 PP4 DP8 rank 0, $m micro-batches x 2 steps"
    "$SCALE" synth-rank --microbatches "$m" --steps 2 --out "$f" --gz | sed 's/^/   /'
    jmb=$(python3 -c "import os; print(os.path.getsize('$f') / 1e6)")
    # `lumos replay` peaked at 1.5x the JSON size on these traces.
    need_mb=$(python3 -c "print(int($jmb * 1.7 + 500))")
    if [ "$(mem_avail_mb)" -lt "$need_mb" ]; then
        skip "single rank $size" "needs about $need_mb MB of memory, $(mem_avail_mb) MB available"
        rm -f "$f" "$f.gz"
        continue
    fi
    for fmt in json json.gz; do
        p=$f
        [ "$fmt" = json.gz ] && p=$f.gz
        for i in $(seq "$REPEAT"); do
            read -r wall cpu rss rc < <(timed "$LUMOS" replay --json "$p")
            echo "   lumos replay --json .$fmt, run $i: $wall s wall, $cpu s CPU, $rss MB peak RSS (exit $rc)"
            [ "$rc" = 0 ] || tail -3 "$WORK/stderr.log"
            printf '{"kind":"replay","size":"%s","format":"%s","json_mb":%s,"run":%d,"wall_s":%s,"cpu_s":%s,"rss_mb":%s,"exit":%s}\n' \
                "$size" "$fmt" "$jmb" "$i" "$wall" "$cpu" "$rss" "$rc" >>"$RES"
        done
        "$SCALE" single "$p" >"$WORK/single.json"
        python3 "$HELP" single "$WORK/single.json" "$size" "$fmt" >>"$RES"
        echo "   scale single .$fmt: $(python3 -c "import json; d = json.load(open('$WORK/single.json')); print(f\"read {d['read_s']} s, build {d['build_s']} s, simulate {d['simulate_s']} s, {d['tasks']} tasks, RSS {d['peak_mb']} MB\")")"
    done
    if [ -n "$HTA" ] && [ "$size" != 4G ]; then
        HTA_INPUTS+=("$f") # compared with HTA at the end, deleted with $WORK
        rm -f "$f.gz"
    else
        rm -f "$f" "$f.gz"
    fi
done

# ---------------------------------------------------------------------- jobs
for ranks in ${JOBS//,/ }; do
    case $ranks in
    64) layout="--tp 8 --pp 2 --dp 4 --microbatches 4" name="GPT-3 175B TP8 PP2 DP4" ;;
    512) layout="--tp 8 --pp 4 --dp 16 --microbatches 8" name="GPT-3 175B TP8 PP4 DP16" ;;
    *) echo "unknown job size $ranks (64 or 512)" >&2; exit 2 ;;
    esac
    # About 34 MB of JSON and 5 MB of gzip per rank.
    need=$((ranks * 5500000))
    if [ "$(avail_bytes)" -lt "$need" ]; then
        skip "$ranks-rank job" "needs $((need / 1000000)) MB free in $WORK, $(($(avail_bytes) / 1000000)) MB available"
        continue
    fi
    d=$WORK/job$ranks
    echo "== $ranks-rank job ($name, 2 steps): synthesizing every rank"
    # shellcheck disable=SC2086
    read -r wall _ _ rc < <(timed "$LUMOS" synth --model gpt3-175b $layout --ranks all --out "$d")
    [ "$rc" = 0 ] || { tail -3 "$WORK/stderr.log"; exit 1; }
    gz=$(du -sb "$d" | cut -f1)
    echo "   synthesized in $wall s: $((gz / 1000000)) MB of gzip"
    # A joint replay of every rank peaked at about 500 B per task, 65k
    # tasks per rank; `lumos replay` about 10% more (64 ranks: 2.06 and
    # 2.24 GB).
    est=$((ranks * 65000 * 500 / 1000000 + 500))
    jb=0
    for tool in representatives full cli; do
        case $tool in
        representatives) cmd=("$SCALE" job --representatives "$d") label="scale job --representatives" need_mb=1000 ;;
        full) cmd=("$SCALE" job "$d") label="scale job (every rank replayed)" need_mb=$est ;;
        cli) cmd=("$LUMOS" replay --job --json "$d") label="lumos replay --job --json" need_mb=$((est * 11 / 10)) ;;
        esac
        if [ "$(mem_avail_mb)" -lt "$((need_mb + 1500))" ]; then
            why="needs about $need_mb MB of memory plus 1.5 GB to spare, $(mem_avail_mb) MB available"
            echo "   SKIPPED $label: $why"
            python3 -c 'import json, sys; print(json.dumps({"kind": "job_skip", "job": sys.argv[1], "ranks": int(sys.argv[2]), "tool": sys.argv[3], "why": sys.argv[4]}))' \
                "$name" "$ranks" "$label" "$why" >>"$RES"
            continue
        fi
        read -r wall cpu rss rc < <(TIMED_OUT=$WORK/out.json timed "${cmd[@]}")
        echo "   $label: $wall s wall, $cpu s CPU, $rss MB peak RSS (exit $rc)"
        [ "$rc" = 0 ] || tail -3 "$WORK/stderr.log"
        python3 "$HELP" job "$WORK/out.json" "$tool" "$name" "$ranks" "$label" "$jb" "$gz" "$wall" "$cpu" "$rss" "$rc" >>"$RES"
        if [ "$jb" = 0 ] && [ "$rc" = 0 ]; then
            jb=$(python3 -c "import json; print(int(json.load(open('$WORK/out.json'))['json_bytes']))")
        fi
        rm -f "$WORK/out.json"
    done
    if [ -n "$HTA" ] && [ "$ranks" = 64 ]; then
        HTA_INPUTS+=("$d")
    else
        rm -rf "$d"
    fi
done

# ----------------------------------------------------------------------- HTA
if [ -n "$HTA" ]; then
    if [ -z "$HTA_PY" ] && [ -x /tmp/hta-venv/bin/python ]; then HTA_PY=/tmp/hta-venv/bin/python; fi
    if [ -z "$HTA_PY" ] || ! "$HTA_PY" -c 'import hta' 2>/dev/null; then
        skip "HTA comparison" "no Python with hta: python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install traceinsight, then --hta-python /tmp/hta-venv/bin/python"
    else
        for inp in "${HTA_INPUTS[@]}"; do
            # HTA's JSON loader peaked near 9x the JSON size (one file in
            # flight per worker process; 2 workers for a job here).
            if [ -d "$inp" ]; then
                need=$((2 * 9 * 34 + 3000))
            else
                need=$(($(stat -c %s "$inp") * 9 / 1000000 + 1000))
            fi
            if [ "$(mem_avail_mb)" -lt "$need" ]; then
                skip "HTA on $(basename "$inp")" "needs about $need MB of memory, $(mem_avail_mb) MB available"
                continue
            fi
            echo "== HTA vs lumos inspect: $(basename "$inp")"
            python3 scripts/hta_compare.py --python "$HTA_PY" --lumos "$LUMOS" --json "$WORK/hta.json" "$inp" >"$WORK/hta.log" 2>&1 ||
                { tail -5 "$WORK/hta.log"; continue; }
            head -1 "$WORK/hta.log" | sed 's/^/   /'
            python3 -c "
import json, sys
for r in json.load(open(sys.argv[1])):
    r.update(kind='hta', label=sys.argv[2]); print(json.dumps(r))" "$WORK/hta.json" "$(basename "$inp")" >>"$RES"
        done
    fi
fi

python3 "$HELP" report "$RES"
echo
echo "results: $RES (tables again: scripts/scale_bench.sh --report $OUT)"
