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
# The Slurm tests run against a real loopback cluster (munge, slurmctld, 6 slurmd, sshd on 127.0.0.1:2222).
# Starting it needs root; without it those tests fail with a message saying how to start it.
if [ "$(id -u)" = 0 ]; then
    scripts/slurm-cluster up || echo "test.sh: scripts/slurm-cluster up failed; the Slurm tests will fail" >&2
fi
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
