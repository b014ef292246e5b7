#!/usr/bin/env bash
# Install every extra and test dependency into .venv, then run the whole test suite.
# Used as is by .ci/run; works on a fresh machine as root or as a user.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[determined,test]"
"$VENV/bin/python" -m pip check

export PATH="$PWD/$VENV/bin:$PATH"
# The Slurm tests run against real loopback clusters (munge, slurmctld, slurmd, sshd; the site profile adds
# slurmdbd and MariaDB).
# Starting it needs root; without it those tests fail with a message saying how to start it.
if [ "$(id -u)" = 0 ]; then
    scripts/slurm-cluster up || echo "test.sh: scripts/slurm-cluster up failed; the Slurm tests will fail" >&2
    # A second cluster unlike the first (other node names, h100, accounting with slurmdbd + MariaDB).
    YANFLOW_SLURM_PROFILE=site scripts/slurm-cluster up \
        || echo "test.sh: the site profile failed to start; its tests will fail" >&2
fi
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
