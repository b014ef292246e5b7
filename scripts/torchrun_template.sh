#!/usr/bin/env bash
# A template project (`yanflow-tui init TEMPLATE`, default torchrun-ddp) run for real as a 2-node job on
# the loopback Slurm test cluster (CPU, gloo), submitted through yanflow's own sbatch rendering. Not part
# of CI: it needs torch (and, for TEMPLATE=accelerate, the accelerate package) in a scratch venv, e.g.
#   python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/python -m pip install torch==2.13.0
#   scripts/torchrun_template.sh /tmp/torchvenv        (or TORCH_PYTHON=/tmp/torchvenv/bin/python)
#   TEMPLATE=accelerate scripts/torchrun_template.sh /tmp/torchvenv   (after pip install accelerate there)
#   TEMPLATE=deepspeed ...   (pip install --no-build-isolation deepspeed torch==2.13.0: no CUDA torch pulled;
#   its first run JIT-compiles DeepSpeed's CPU ops inside the job, minutes on 2 cores: raise TIME_LIMIT and
#   WAIT_SECONDS; a job killed mid-build leaves a lock in ~/.cache/torch_extensions/*/ that hangs later runs)
# NODES, NPROC, TIME_LIMIT (the job's, 00:05:00), WAIT_SECONDS (300) and CONFIG (yanflow.yaml) change the run.
# The project is written unchanged; only the spec is adapted to the test cluster (no image: the
# processes run on the node; CPU sizes; the gpu partition; PATH to the venv). Exits 0 when every one of
# the NODES x NPROC ranks reported, the job ended COMPLETED, the project wrote its TensorBoard event
# file and a checkpoint, and `yanflow-tui metrics JOB --json` reads the loss curve back from the cluster.
# REQUIRE_TORCH=0 runs it without torch: the stub launchers of the tests (tests/launchstubs.py) and
# the project's pure-Python loop (checkpoint.json), the same wiring on the cluster.
set -euo pipefail
# shellcheck source=scripts/slurm_job.sh
source "$(dirname "$0")/slurm_job.sh"
TEMPLATE=${TEMPLATE:-torchrun-ddp} REQUIRE_TORCH=${REQUIRE_TORCH:-1}
case "$TEMPLATE" in
    torchrun-ddp) LAUNCHER=torchrun MODULE=torch ;;
    accelerate) LAUNCHER=accelerate MODULE=accelerate ;;
    deepspeed) LAUNCHER=deepspeed MODULE=deepspeed ;;
    *) echo "TEMPLATE: torchrun-ddp, accelerate or deepspeed (what pip adds to torch without a build), got $TEMPLATE" >&2
       exit 2 ;;
esac

work_dir template
if [ "$REQUIRE_TORCH" = 0 ]; then
    "$ROOT/.venv/bin/python" -c 'import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1] + "/tests")
from launchstubs import make_launchers; make_launchers(Path(sys.argv[2]))' "$ROOT" "$WORK/bin"
    TORCH_BIN=$WORK/bin
else
    torch_python "${1:-}" "$LAUNCHER"
    if ! "$TORCH_PYTHON" -c "import $MODULE" 2>/dev/null; then
        echo "$TEMPLATE needs $MODULE: $TORCH_PYTHON -m pip install $MODULE (with torch==2.13.0 on the same line)" >&2
        exit 2
    fi
fi

PROJECT=$WORK/project
"$YANFLOW" init "$TEMPLATE" "$PROJECT"
# The written spec with the cluster's shape: no container image, CPU sizes, the venv's PATH, the log file.
"$ROOT/.venv/bin/python" - "$PROJECT/job.yaml" "$WORK/job.yaml" "$WORK" "$TORCH_BIN" "$NODES" "$NPROC" \
    "${TIME_LIMIT:-00:05:00}" <<'PY'
import sys

import yaml

source, target, work, bin_dir, nodes, nproc, limit = sys.argv[1:]
with open(source, encoding="utf-8") as fh:
    spec = yaml.safe_load(fh)
spec.pop("image", None)
spec["resources"] = {"nodes": int(nodes), "gpus": int(nproc), "cpus": int(nproc), "memory": "2G"}
spec["env"] = {**spec.get("env", {}), "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "GLOO_SOCKET_IFNAME": "lo"}
spec["slurm"] = {"partition": "gpu", "time": limit, "output": f"{work}/%j.out"}
with open(target, "w", encoding="utf-8") as fh:
    yaml.safe_dump(spec, fh, sort_keys=False)
PY

submit_and_wait "$WORK/job.yaml"
WORLD=$((NODES * NPROC))
RANKS=$(grep -oE "^rank [0-9]+/$WORLD " "$WORK/$JOB_ID.out" | sort -u | wc -l || true)
EVENTS=$(find "$PROJECT/tb" -name 'events.out.tfevents.*' 2>/dev/null | wc -l)
CHECKPOINTS=$(find "$PROJECT/checkpoints" -type f -size +0 2>/dev/null | wc -l)
POINTS=0
if [ "$STATE" = COMPLETED ]; then
    # The curves as the console reads them: through the cluster's transport, from the job's log directory.
    if ! "$YANFLOW" metrics --config "$CONFIG" --json "$JOB_ID" > "$WORK/metrics.json"; then
        echo '{}' > "$WORK/metrics.json"
    fi
    POINTS=$("$ROOT/.venv/bin/python" -c 'import json, sys; print(len(json.load(open(sys.argv[1])).get("loss", [])))' \
        "$WORK/metrics.json")
fi
SYNCED="not checked"  # torchrun-ddp with torch: rank 0 compares every rank's final weights (DDP's all-reduce)
if [ "$TEMPLATE" = torchrun-ddp ] && [ "$REQUIRE_TORCH" != 0 ]; then
    SYNCED=yes
    grep -q "^weights equal on all $WORLD ranks" "$WORK/$JOB_ID.out" || SYNCED=no
fi
NODE_RANKS=$(grep -oE "^rank [0-9]+/$WORLD node [0-9]+ " "$WORK/$JOB_ID.out" | awk '{print $4}' | sort -u | tr '\n' ' ' || true)
echo "node ranks seen: ${NODE_RANKS:-none printed}"
echo "weights in sync: $SYNCED; ranks $RANKS/$WORLD, event files $EVENTS, checkpoint files $CHECKPOINTS, loss points read by metrics $POINTS"
if [ "$STATE" = COMPLETED ] && [ "$RANKS" -eq "$WORLD" ] && [ "$EVENTS" -ge 1 ] && [ "$CHECKPOINTS" -ge 1 ] \
    && [ "$POINTS" -ge 10 ] && [ "$SYNCED" != no ]; then
    find "$PROJECT/tb" "$PROJECT/checkpoints" -type f -printf '  %p %s bytes\n'
    echo "OK: job $JOB_ID ($TEMPLATE) COMPLETED in $RUN_TIME: $RANKS ranks on $NODES nodes, $POINTS loss points"
    rm -rf "$WORK"
else
    echo "FAILED: job $JOB_ID ($TEMPLATE): state ${STATE:-gone}, $RANKS of $WORLD ranks, $EVENTS event files," \
        "$CHECKPOINTS checkpoint files, $POINTS loss points, weights in sync: $SYNCED (files kept in $WORK)" >&2
    exit 1
fi
