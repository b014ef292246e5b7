#!/usr/bin/env bash
# A real 2-node torchrun (gloo) all-reduce on the loopback Slurm test cluster, submitted through
# yanflow's own sbatch rendering (yanflow-tui submit). Not part of CI: it needs torch, e.g.
#   python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch==2.13.0
#   TORCH_PYTHON=/tmp/torch-venv/bin/python scripts/torchrun_allreduce.sh
# Each of the 2 nodes runs torchrun with 2 processes; every process adds rank+1, so all 4 must read
# 1+2+3+4 = 10 (NODES and NPROC change the shape). Exits 0 when they do, and cancels its job on any exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TORCH_PYTHON=${TORCH_PYTHON:-python3}
YANFLOW=${YANFLOW:-$ROOT/.venv/bin/yanflow-tui}
SLURM_DIR=${YANFLOW_SLURM_DIR:-/tmp/yanflow-slurm}
export SLURM_CONF=${SLURM_CONF:-$SLURM_DIR/etc/slurm.conf}
NODES=${NODES:-2} NPROC=${NPROC:-2}

if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
    echo "torch is not importable by $TORCH_PYTHON; set TORCH_PYTHON to a python that has it" >&2
    exit 2
fi
TORCH_BIN=$(cd "$(dirname "$(command -v "$TORCH_PYTHON")")" && pwd)
WORK=$(mktemp -d "$SLURM_DIR/jobs/allreduce-XXXXXX")
chmod 755 "$WORK"
JOB=
trap '[ -n "$JOB" ] && scancel "$JOB" 2>/dev/null; true' EXIT

cat > "$WORK/allreduce.py" <<'PY'
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
expected = world * (world + 1) / 2
print(f"rank {rank}/{world} node_rank {os.environ['NODE_RANK']} on {os.environ['SLURMD_NODENAME']} "
      f"local_rank {os.environ['LOCAL_RANK']} all_reduce {value.item():g} expected {expected:g}", flush=True)
dist.destroy_process_group()
raise SystemExit(0 if value.item() == expected else 1)
PY

cat > "$WORK/allreduce.yaml" <<YAML
name: torchrun-allreduce
kind: multi-node
launcher: torchrun
command: [python3, $WORK/allreduce.py]
workdir: $WORK
resources: {nodes: $NODES, gpus: $NPROC, cpus: $NPROC, memory: 2G}
env: {PATH: "$TORCH_BIN:/usr/local/bin:/usr/bin:/bin", GLOO_SOCKET_IFNAME: lo}
slurm: {partition: gpu, time: "00:05:00", output: $WORK/%j.out}
YAML

CONFIG="$SLURM_DIR/yanflow-local.yaml"
"$YANFLOW" submit --config "$CONFIG" --dry-run "$WORK/allreduce.yaml"
OUT=$("$YANFLOW" submit --config "$CONFIG" "$WORK/allreduce.yaml")
echo "$OUT"
JOB=$(printf '%s\n' "$OUT" | grep -oE '[0-9]+' | tail -n 1)
echo "job $JOB; waiting for it to finish"
STATE=
for _ in $(seq 1 180); do
    STATE=$(scontrol -o show job "$JOB" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 || true)
    case "$STATE" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|"") break ;; esac
    sleep 1
done
echo "--- job $JOB: $STATE"
cat "$WORK/$JOB.out" 2>/dev/null || true
JOB_DONE=$JOB; JOB=
WORLD=$((NODES * NPROC))
SUM=$((WORLD * (WORLD + 1) / 2))
LINES=$(grep -c "all_reduce $SUM expected $SUM\$" "$WORK/$JOB_DONE.out" || true)
if [ "$STATE" = COMPLETED ] && [ "$LINES" -eq $((NODES * NPROC)) ]; then
    echo "OK: $LINES processes on $NODES nodes agree on the all-reduce"
    rm -rf "$WORK"
else
    echo "FAILED: state $STATE, $LINES of $((NODES * NPROC)) processes agreed (files kept in $WORK)" >&2
    exit 1
fi
