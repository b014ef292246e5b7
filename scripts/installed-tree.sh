# Sourced by scripts/typecheck and scripts/importcheck: a temp tree of symlinks laid out as the wheel is
# (yanflow_tui/ with screens/, backends/ and sample_jobs/ inside), since the editable install maps those
# folders only through an import hook that mypy and grimp cannot follow. Sets ROOT (the repository),
# VENV (absolute) and TREE (removed on exit).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
VENV=${VENV:-.venv}
[[ $VENV = /* ]] || VENV=$ROOT/$VENV
TREE=$(mktemp -d)
trap 'rm -rf "$TREE"' EXIT
mkdir "$TREE/yanflow_tui"
for f in yanflow_tui/*; do ln -s "$ROOT/$f" "$TREE/yanflow_tui/"; done
for d in screens backends sample_jobs; do ln -s "$ROOT/$d" "$TREE/yanflow_tui/$d"; done
