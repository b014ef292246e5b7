#!/usr/bin/env bash
# A real 2-node torchrun (gloo) all-reduce on the loopback Slurm test cluster, submitted through
# yanflow's own sbatch rendering (yanflow-tui submit). Not part of CI: it needs torch, e.g.
#   python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/python -m pip install torch==2.13.0
#   scripts/torchrun_allreduce.sh /tmp/torchvenv        (or TORCH_PYTHON=/tmp/torchvenv/bin/python)
# Each of the 2 nodes runs torchrun with 2 processes; every process adds rank+1, so all 4 must read
# 1+2+3+4 = 10 (NODES and NPROC change the shape). Exits 0 when they do, and cancels its job on any exit.
set -euo pipefail
# shellcheck source=scripts/slurm_job.sh
source "$(dirname "$0")/slurm_job.sh"
torch_python "${1:-}"
work_dir allreduce

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
command: [python3, "$WORK/allreduce.py"]
workdir: "$WORK"
resources: {nodes: $NODES, gpus: $NPROC, cpus: $NPROC, memory: 2G}
env: {PATH: "$TORCH_BIN:/usr/local/bin:/usr/bin:/bin", GLOO_SOCKET_IFNAME: lo}
slurm: {partition: gpu, time: "00:05:00", output: "$WORK/%j.out"}
YAML

submit_and_wait "$WORK/allreduce.yaml"
WORLD=$((NODES * NPROC))
SUM=$((WORLD * (WORLD + 1) / 2))
LINES=$(grep -c "all_reduce $SUM expected $SUM\$" "$WORK/$JOB_ID.out" || true)
if [ "$STATE" = COMPLETED ] && [ "$LINES" -eq "$WORLD" ]; then
    echo "OK: job $JOB_ID: $LINES processes on $NODES nodes agree on the all-reduce (${RUN_TIME})"
    rm -rf "$WORK"
else
    echo "FAILED: job $JOB_ID: state ${STATE:-gone}, $LINES of $WORLD processes agreed (files kept in $WORK)" >&2
    exit 1
fi
