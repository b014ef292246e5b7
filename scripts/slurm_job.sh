# shellcheck shell=bash
# Sourced (not run) by the real-torch scripts under scripts/ (torchrun_allreduce.sh, torchrun_template.sh):
# the loopback Slurm test cluster's settings, the python that has torch, and one job submitted through
# yanflow's own rendering (`yanflow-tui submit`), waited on, and cancelled if the script exits early.
# The sourcing script runs under `set -euo pipefail`; nothing here is started in the background.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    echo "scripts/slurm_job.sh is sourced by the torchrun scripts, not run" >&2
    exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
YANFLOW=${YANFLOW:-$ROOT/.venv/bin/yanflow-tui}
SLURM_DIR=${YANFLOW_SLURM_DIR:-/tmp/yanflow-slurm}
export SLURM_CONF=${SLURM_CONF:-$SLURM_DIR/etc/slurm.conf}
CONFIG=${CONFIG:-$SLURM_DIR/yanflow.yaml}  # over SSH, as a user would; yanflow-local.yaml: local commands
NODES=${NODES:-2} NPROC=${NPROC:-2}
WAIT_SECONDS=${WAIT_SECONDS:-300}
JOB=
trap '[ -n "$JOB" ] && scancel "$JOB" 2>/dev/null; true' EXIT

# torch_python [PYTHON_OR_VENV] [LAUNCHER]: sets TORCH_PYTHON (an interpreter that imports torch) and
# TORCH_BIN (its bin folder, the job's PATH, where LAUNCHER, default torchrun, must be), from the
# argument, else $TORCH_PYTHON; a venv folder stands for its bin/python. Exits 2, saying how to make
# one, when torch is not importable there.
torch_python() {
    local given=${1:-${TORCH_PYTHON:-}}
    if [ -z "$given" ]; then
        echo "give the python (or venv) that has torch: $0 /tmp/torchvenv, or TORCH_PYTHON=..." >&2
        echo "  make one: python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/python -m pip install torch==2.13.0" >&2
        exit 2
    fi
    if [ -d "$given" ]; then given=$given/bin/python; fi
    TORCH_PYTHON=$(command -v "$given" || true)
    if [ -z "$TORCH_PYTHON" ] || ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
        echo "torch is not importable by ${TORCH_PYTHON:-$given} (not found, or no torch in it)" >&2
        echo "  install it there: ${TORCH_PYTHON:-$given} -m pip install torch==2.13.0 (a plain 'torch' is a CUDA build of GBs)" >&2
        exit 2
    fi
    TORCH_BIN=$(cd "$(dirname "$TORCH_PYTHON")" && pwd)
    if [ ! -x "$TORCH_BIN/${2:-torchrun}" ]; then
        echo "no ${2:-torchrun} beside $TORCH_PYTHON (in $TORCH_BIN)" >&2
        exit 2
    fi
}

# work_dir NAME: sets WORK, a new folder under the cluster's jobs folder that every node can read.
work_dir() {
    WORK=$(mktemp -d "$SLURM_DIR/jobs/$1-XXXXXX")
    chmod 755 "$WORK"
}

# submit_and_wait SPEC: shows the dry run, submits SPEC to $CONFIG's cluster and waits up to
# $WAIT_SECONDS for the job to end. Sets JOB_ID, STATE (the final Slurm state, empty if the job was
# no longer known), RUN_TIME (scontrol's RunTime) and NODE_LIST, and prints the job's log ($WORK/JOB_ID.out).
submit_and_wait() {
    local spec=$1 out info=
    "$YANFLOW" submit --config "$CONFIG" --dry-run "$spec"
    out=$("$YANFLOW" submit --config "$CONFIG" "$spec")
    echo "$out"
    JOB=$(printf '%s\n' "$out" | grep -oE '[0-9]+' | tail -n 1)
    JOB_ID=$JOB STATE= RUN_TIME=
    echo "job $JOB_ID; waiting for it to finish"
    for _ in $(seq 1 "$WAIT_SECONDS"); do
        info=$(scontrol -o show job "$JOB_ID" 2>/dev/null || true)
        STATE=$(printf '%s\n' "$info" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 || true)
        case "$STATE" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "") break ;; esac
        sleep 1
    done
    RUN_TIME=$(printf '%s\n' "$info" | grep -oE 'RunTime=[0-9:-]+' | cut -d= -f2 || true)
    NODE_LIST=$(printf '%s\n' "$info" | grep -oE ' NodeList=[^ ]+' | cut -d= -f2 || true)
    case "$STATE" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "") JOB= ;; esac
    echo "--- job $JOB_ID: ${STATE:-gone} after ${RUN_TIME:-?} on ${NODE_LIST:-?}"
    cat "$WORK/$JOB_ID.out" 2>/dev/null || true
}
