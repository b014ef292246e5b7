#!/usr/bin/env bash
# Install every extra and test dependency into .venv, run the static checks (scripts/check: ruff, ruff
# format, mypy, import-linter), then the whole test suite and the Python matrix (scripts/matrix); fails when
# any check, any test or any Python of the matrix fails.
# `scripts/test.sh --checks-only` stops after the checks; other arguments go to pytest.
# Used as is by .ci/run; works on a fresh machine as root or as a user.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# scripts/test-constraints.txt keeps kubernetes below 37 beside determined (why: see there);
# scripts/k8s-newest tests the newest client.
"$VENV/bin/python" -m pip install --quiet -c scripts/test-constraints.txt -e ".[all,test]"
"$VENV/bin/python" -m pip check

checks=0
VENV=$VENV scripts/check || checks=$?
if [ "${1:-}" = --checks-only ]; then
    exit "$checks"
fi

export PATH="$PWD/$VENV/bin:$PATH"
# The container tests run podman for real (an image built from a busybox rootfs); without it they fail.
scripts/podman-setup || echo "test.sh: scripts/podman-setup failed; the container tests will fail" >&2
# The editor and outside-script tests run the real YAML language server (npm) and jq; without them they fail.
scripts/outside-tools-setup || echo "test.sh: scripts/outside-tools-setup failed; the editor tests will fail" >&2
# The Slurm tests run against real loopback clusters (munge, slurmctld, slurmd, sshd; the site profile adds
# slurmdbd and MariaDB).
# Starting it needs root; without it those tests fail with a message saying how to start it.
if [ "$(id -u)" = 0 ]; then
    scripts/slurm-cluster up || echo "test.sh: scripts/slurm-cluster up failed; the Slurm tests will fail" >&2
    # A second cluster unlike the first (other node names, h100, accounting with slurmdbd + MariaDB).
    YANFLOW_SLURM_PROFILE=site scripts/slurm-cluster up \
        || echo "test.sh: the site profile failed to start; its tests will fail" >&2
    # The GPU metrics tests start a real Prometheus (Debian's package) scraping a fake DCGM exporter.
    if ! command -v prometheus >/dev/null && [ ! -x /usr/bin/prometheus ]; then
        { apt-get install -y -qq prometheus >/dev/null 2>&1 \
            || { apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; }; } \
            || echo "test.sh: installing prometheus failed; the metrics tests will fail" >&2
    fi
fi
# The whole run (no pytest arguments) also runs the Python matrix: 3.10 to 3.13, each in a fresh venv, and
# scripts/dist-check (the built sdist and wheel, twine check, a fresh install, the sdist's unit tests). It runs
# first, so that the suite's own summary is the last line.
matrix=0
if [ $# = 0 ]; then
    scripts/matrix </dev/null || matrix=$?
    # The Kubernetes backend on the newest client pyproject allows, on 3.13 (the main venv keeps kubernetes<37).
    scripts/k8s-newest </dev/null || { echo "test.sh: scripts/k8s-newest failed" >&2; matrix=1; }
    # python -m build, twine check, the built wheel in a fresh venv, the unit tests from the unpacked sdist.
    VENV=$VENV scripts/dist-check </dev/null || { echo "test.sh: scripts/dist-check failed" >&2; matrix=1; }
fi
tests=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" || tests=$?
if [ "$matrix" != 0 ]; then
    echo "test.sh: the Python matrix, scripts/k8s-newest or scripts/dist-check failed (see above)" >&2
    [ "$tests" = 0 ] && tests=$matrix
fi
if [ "$checks" != 0 ]; then
    echo "test.sh: the static checks failed (see '== check:' above; scripts/check NAME reruns one)" >&2
fi
[ "$checks" = 0 ] && exit "$tests"
exit 1
