#!/usr/bin/env bash
# Scale benchmark of jobs through compact graphs (docs/PERFORMANCE.md,
# "Jobs through compact graphs"; issue 12, item 7): synthesizes a job into
# a temporary directory (gzip, deleted at exit), ingests every rank into
# .lgraph files with `lumos ingest`, and replays them with
# `lumos replay --representatives`, each under /usr/bin/time -v.
#
#   scripts/scale_ranks.sh [--ranks 4096] [--model gpt3-175b] [--tp 8]
#                          [--pp 8] [--microbatches 16] [--joint]
#
# The data-parallel degree is ranks / (tp x pp). With --joint it also
# replays every rank jointly from the compact files (`lumos replay --job`)
# and prints how far the representatives' replayed steps are from it (the
# 0.5% target): about 520 B of memory per task, so 64 and 512 ranks of
# GPT-3 175B fit in 24 GB, 4,096 do not.
#
# Prints one line per stage (wall s, CPU s, peak RSS MB) and the sizes of
# the traces and of the compact files. A stage that would not fit on disk
# is refused before it starts.
set -euo pipefail

RANKS=4096 MODEL=gpt3-175b TP=8 PP=8 MB=16 JOINT=
while [ $# -gt 0 ]; do
    case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --tp) TP=$2; shift 2 ;;
    --pp) PP=$2; shift 2 ;;
    --microbatches) MB=$2; shift 2 ;;
    --joint) JOINT=1; shift ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
if [ $((RANKS % (TP * PP))) != 0 ]; then
    echo "--ranks $RANKS is not a multiple of tp x pp = $((TP * PP))" >&2
    exit 2
fi
DP=$((RANKS / (TP * PP)))

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ ! -x /usr/bin/time ]; then
    echo "== /usr/bin/time is missing: installing the Debian package 'time'"
    apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi
echo 1000 >/proc/self/oom_score_adj 2>/dev/null || true

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lumos-ranks.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "== machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== job: $MODEL, $RANKS ranks (TP$TP PP$PP DP$DP), $MB micro-batches, 2 steps; files in $WORK (deleted at exit)"

# About 5.5 MB of gzip per GPT-3 175B rank of 60k tasks (the 512-rank job
# of docs/PERFORMANCE.md), and as much again for the compact files.
need=$((RANKS * 11000000))
avail=$(df --output=avail -B1 "$WORK" | tail -1)
if [ "$avail" -lt "$need" ]; then
    echo "needs about $((need / 1000000)) MB free in $WORK, $((avail / 1000000)) MB available" >&2
    exit 1
fi

cargo build --release -p lumos --bin lumos 2>&1 | tail -1
LUMOS=${CARGO_TARGET_DIR:-$ROOT/target}/release/lumos

# Runs a command under /usr/bin/time -v with stdout to $2; prints its line,
# with the 1-minute load average before and after (other users' work makes
# the wall time longer than the CPU time / cores).
timed() { # LABEL STDOUT CMD...
    local label=$1 out=$2 rc=0 load0 load1
    shift 2
    load0=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -v -o "$WORK/time.log" "$@" >"$out" 2>"$WORK/stderr.log" || rc=$?
    load1=$(cut -d' ' -f1 /proc/loadavg)
    read -r wall cpu rss _ < <(python3 scripts/scale_report.py time "$WORK/time.log" "$rc")
    echo "   $label: $wall s wall, $cpu s CPU, $rss MB peak RSS, load $load0 -> $load1 (exit $rc)"
    [ "$rc" = 0 ] || { tail -3 "$WORK/stderr.log"; exit 1; }
}

timed "lumos synth --ranks all" /dev/null "$LUMOS" synth --model "$MODEL" --tp "$TP" --pp "$PP" \
    --dp "$DP" --microbatches "$MB" --ranks all --out "$WORK/traces"
echo "   traces: $(du -sb "$WORK/traces" | cut -f1) bytes of gzip"
timed "lumos ingest" /dev/null "$LUMOS" ingest -o "$WORK/graphs" "$WORK/traces"
echo "   compact graphs: $(du -sb "$WORK/graphs" | cut -f1) bytes"
rm -rf "$WORK/traces"
timed "lumos replay --representatives" "$WORK/reps.json" "$LUMOS" replay --representatives --json "$WORK/graphs"
if [ -n "$JOINT" ]; then
    timed "lumos replay --job (every rank)" "$WORK/joint.json" "$LUMOS" replay --job --json "$WORK/graphs"
fi
python3 - "$WORK/reps.json" "${JOINT:+$WORK/joint.json}" <<'EOF'
import json, sys
reps = json.load(open(sys.argv[1]))
r = reps["representatives"]
print(f"   {r['ranks']} ranks in {len(r['groups'])} groups, {r['replayed_ranks']} replayed, "
      f"{r['modelled_collectives']} collectives against modelled peers")
joint = json.load(open(sys.argv[2]))["job"]["steps"] if len(sys.argv) > 2 and sys.argv[2] else None
for k, s in enumerate(reps["job"]["steps"]):
    line = f"   step {k}: measured {s['measured_us'] / 1e3:.1f} ms, replayed {s['replayed_us'] / 1e3:.1f} ms"
    if joint:
        j = joint[k]["replayed_us"]
        line += f", jointly {j / 1e3:.1f} ms: {100 * (s['replayed_us'] - j) / j:+.3f}%"
    print(line)
EOF
