"""A running local job's CPU and memory from /proc (``backends/local/procuse``): a real job whose leader
burns one core while a child in a session of its own holds 64 MiB. The backend's figures must equal
what /proc says, read here independently (``stat`` and ``status``) just before and after the backend's
call: its CPU ticks lie between the tree's ticks over the whole call and those less what one busy core
could gain outside its window, and its RSS between the two readings. ``explain --json`` carries the
same figures (a running job's ``health``) and a failed job's first failure, both checked against the
shipped schema."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from jobhelpers import run_cli
from jsoncontract import validated
from test_local_first_failure import run_failing
from waiting import async_wait_until

from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.spec import spec_from_data

CLK_TCK = os.sysconf("SC_CLK_TCK")
HOLD_MB = 64

BURN = f"""import subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c", "import time; b = b'x' * ({HOLD_MB} * 2**20); open('held', 'w').close(); time.sleep(600)"],
    start_new_session=True,
)
while True:
    pass
"""
FAIL = "import sys\nprint('step 1', flush=True)\nraise ValueError('shard 7 is corrupt')\n"


def proc_tree(leader: int) -> list[int]:
    """The job's tree as this test reads /proc: the leader's group and all their descendants."""
    parents, group = {}, set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2 :].split()
            if fields[0] in "ZX":
                continue
            parents[int(name)] = int(fields[1])
            if int(fields[2]) == leader:
                group.add(int(name))
    while more := {p for p, pp in parents.items() if pp in group} - group:
        group |= more
    return sorted(group)


def tree_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rfind(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    return total


def tree_rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


async def test_a_running_jobs_cpu_and_memory_are_what_proc_says(state, fake_nvml, tmp_path):
    (tmp_path / "burn.py").write_text(BURN)
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        job_id = await backend.submit(
            spec_from_data({"name": "live-burn", "command": [sys.executable, "burn.py"], "workdir": str(tmp_path)})
        )
        await async_wait_until(lambda: (tmp_path / "held").exists(), what="the child holds its memory")
        leader = backend._row(job_id).pid
        assert leader
        pids = proc_tree(leader)
        assert len(pids) == 3  # the runner, the burning job and its child in its own session

        before_at, before_ticks, before_rss = time.monotonic(), tree_ticks(pids), tree_rss_kb(pids)
        found = await backend.live_use([job_id])
        after_ticks, after_rss, after_at = tree_ticks(pids), tree_rss_kb(pids), time.monotonic()

        use = found[job_id]
        assert use.source == "/proc" and use.parts == 3 and use.window_seconds
        measured = use.cpu_percent / 100 * use.window_seconds * CLK_TCK  # the backend's ticks, back from its %
        outside = (after_at - before_at) - use.window_seconds  # time around its window, within this test's
        # One core burns (the others sleep): outside its window it gains at most ``outside`` seconds of
        # ticks, and each boundary may split a tick.
        assert after_ticks - before_ticks - outside * CLK_TCK - 2 <= measured <= after_ticks - before_ticks + 1e-6
        assert measured > 0
        assert min(before_rss, after_rss) <= use.memory_used_kb <= max(before_rss, after_rss)
        assert use.memory_used_kb >= HOLD_MB * 1024

        # The CLI (a process of its own) reads the same tree: explain --json's health, in the schema.
        answer = run_cli("explain", job_id, "--json")
        assert answer.returncode == 0, answer.stderr
        health = validated(answer.stdout, "explain")["explain"]["health"]
        assert health["source"] == {"CPU and memory": "/proc"} and health["missing_source"] == {}
        assert health["cpu_busy_percent"] > 0 and health["memory_used_kb"] >= HOLD_MB * 1024
        assert validated(answer.stdout, "explain")["explain"]["first_failure"] is None
    finally:
        await backend.cancel(job_id)
        await backend.close()


async def test_explain_json_carries_a_failed_jobs_first_failure(state, tmp_path):
    job, _, _ = await run_failing(state, tmp_path, FAIL)
    answer = run_cli("explain", job.id, "--json")
    assert answer.returncode == 0, answer.stderr
    data = validated(answer.stdout, "explain")["explain"]
    assert data["health"] is None and data["category"] == "finished"
    first = data["first_failure"]["first"]
    assert (first["rank"], first["kind"], first["why"]) == ("0", "exception", "ValueError: shard 7 is corrupt")
    assert first["exit_code"] == 1
    plain = json.loads(run_cli("failure", job.id, "--json").stdout)
    assert validated(json.dumps(plain), "failure")["failure"]["first"] == first
