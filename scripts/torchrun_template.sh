#!/usr/bin/env bash
# The torchrun DDP template project (`yanflow-tui init torchrun-ddp`), run for real as a 2-node job on
# the loopback Slurm test cluster (CPU, gloo), submitted through yanflow's own sbatch rendering.
# Not part of CI: it needs torch, e.g.
#   python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch
#   TORCH_PYTHON=/tmp/torch-venv/bin/python scripts/torchrun_template.sh
# The project is written unchanged; only the spec is adapted to the test cluster (no image: the
# processes run on the node, CPU sizes, the gpu partition). Exits 0 when every one of the
# NODES x NPROC ranks reported, and the project wrote its TensorBoard event file and checkpoint.
# REQUIRE_TORCH=0 runs it without torch: the stub torchrun of the tests (tests/launchstubs.py) and
# the project's pure-Python loop (checkpoint.json), the same wiring on the cluster.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TORCH_PYTHON=${TORCH_PYTHON:-python3}
YANFLOW=${YANFLOW:-$ROOT/.venv/bin/yanflow-tui}
SLURM_DIR=${YANFLOW_SLURM_DIR:-/tmp/yanflow-slurm}
export SLURM_CONF=${SLURM_CONF:-$SLURM_DIR/etc/slurm.conf}
NODES=${NODES:-2} NPROC=${NPROC:-2} REQUIRE_TORCH=${REQUIRE_TORCH:-1}
CHECKPOINT=checkpoint.pt

if [ "$REQUIRE_TORCH" = 0 ]; then
    CHECKPOINT=checkpoint.json
elif ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
    echo "torch is not importable by $TORCH_PYTHON; set TORCH_PYTHON to a python that has it" >&2
    exit 2
fi
TORCH_BIN=$(cd "$(dirname "$(command -v "$TORCH_PYTHON")")" && pwd)
WORK=$(mktemp -d "$SLURM_DIR/jobs/template-XXXXXX")
chmod 755 "$WORK"
if [ "$REQUIRE_TORCH" = 0 ]; then
    "$ROOT/.venv/bin/python" -c 'import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1] + "/tests")
from launchstubs import make_launchers; make_launchers(Path(sys.argv[2]))' "$ROOT" "$WORK/bin"
    TORCH_BIN=$WORK/bin
fi
JOB=
trap '[ -n "$JOB" ] && scancel "$JOB" 2>/dev/null; true' EXIT

"$YANFLOW" init torchrun-ddp "$WORK/project"
PROJECT=$WORK/project
# The written spec, with the cluster's shape: no container image, CPU sizes, and where the log goes.
grep -v -E '^(image|resources):' "$PROJECT/job.yaml" > "$WORK/job.yaml"
cat >> "$WORK/job.yaml" <<YAML
resources: {nodes: $NODES, gpus: $NPROC, cpus: $NPROC, memory: 2G}
env: {PATH: "$TORCH_BIN:/usr/local/bin:/usr/bin:/bin", GLOO_SOCKET_IFNAME: lo, PYTHONUNBUFFERED: "1"}
slurm: {partition: gpu, time: "00:05:00", output: $WORK/%j.out}
YAML
python3 - "$WORK/job.yaml" <<'PY'
import sys, re
path = sys.argv[1]
text = open(path).read()
text = re.sub(r'^env:\n  PYTHONUNBUFFERED: "1"\n', "", text, flags=re.M)  # the env above replaces it
open(path, "w").write(text)
PY

CONFIG="$SLURM_DIR/yanflow-local.yaml"
"$YANFLOW" submit --config "$CONFIG" --dry-run "$WORK/job.yaml"
OUT=$("$YANFLOW" submit --config "$CONFIG" "$WORK/job.yaml")
echo "$OUT"
JOB=$(printf '%s\n' "$OUT" | grep -oE '[0-9]+' | tail -n 1)
echo "job $JOB; waiting for it to finish"
STATE=
for _ in $(seq 1 300); do
    STATE=$(scontrol -o show job "$JOB" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 || true)
    case "$STATE" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|"") break ;; esac
    sleep 1
done
echo "--- job $JOB: $STATE"
cat "$WORK/$JOB.out" 2>/dev/null || true
JOB_DONE=$JOB; JOB=
WORLD=$((NODES * NPROC))
RANKS=$(grep -oE "rank [0-9]+/$WORLD " "$WORK/$JOB_DONE.out" | sort -u | wc -l || true)
EVENTS=$(find "$PROJECT/tb" -name 'events.out.tfevents.*' 2>/dev/null | wc -l)
if [ "$STATE" = COMPLETED ] && [ "$RANKS" -eq "$WORLD" ] && [ "$EVENTS" -ge 1 ] \
    && [ -s "$PROJECT/checkpoints/$CHECKPOINT" ]; then
    echo "OK: $RANKS ranks on $NODES nodes; event file and checkpoint in $PROJECT"
    rm -rf "$WORK"
else
    echo "FAILED: state $STATE, $RANKS of $WORLD ranks, $EVENTS event files (files kept in $WORK)" >&2
    exit 1
fi
