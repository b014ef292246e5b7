"""The first failure across ranks on the local backend: a real child process that runs four "ranks"
(writing torchrun's ``[rankN]:`` prefixes into the one log, as torchrun does): rank 2 raises, the others
print the NCCL watchdog timeout later. Read in process (``failureevidence``) and through the CLI
(``yanflow-tui failure JOB`` and ``--json``)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from jobhelpers import run_cli
from waiting import async_wait_until

from yanflow_tui import firstfailure as ff
from yanflow_tui.backends.local.backend import LocalBackend, local_host
from yanflow_tui.config import ClusterConfig
from yanflow_tui.failureevidence import find_first_failure
from yanflow_tui.model import JobState
from yanflow_tui.spec import spec_from_data

# The four ranks, one after another in one process (the order torchrun's merged output could have).
TRAIN = r"""import datetime, sys, time, traceback
now = lambda: datetime.datetime.now(datetime.timezone.utc)
print(f"{now().isoformat()} launching 4 workers", flush=True)
for r in range(4):
    print(f"[rank{r}]: {now().isoformat()} step 1", flush=True)
time.sleep(1)
print(f"[rank2]: {now().isoformat()} loading shard 7", flush=True)
try:
    raise ValueError("shard 7 is corrupt")
except ValueError:
    for line in traceback.format_exc().splitlines():
        print(f"[rank2]: {line}", file=sys.stderr, flush=True)
time.sleep(1.1)
for r in (0, 1, 3):
    t = now()
    print(f"[rank{r}]:[E{t:%m%d %H:%M:%S.%f} 811 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 ms", flush=True)
print("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", file=sys.stderr, flush=True)
sys.exit(1)
"""


async def run_failing(state: Path, workdir: Path, script: str):
    """Run ``script`` as a local job until it fails: the job, its first failure and its log's lines."""
    (workdir / "train.py").write_text(script)
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        job_id = await backend.submit(
            spec_from_data({"name": "failure-local", "command": [sys.executable, "train.py"], "workdir": str(workdir)})
        )

        async def failed():
            job = await backend.get_job(job_id)
            return job if job.state is JobState.FAILED else None

        job = await async_wait_until(failed, what="the job failed")
        found = await find_first_failure(backend, job, 30)
        lines = [line.text async for line in backend.stream_logs(job_id) if not line.status]
    finally:
        await backend.close()
    return job, found, lines


async def test_the_raising_rank_is_named_in_process_and_by_the_cli(state, tmp_path: Path):
    job, found, lines = await run_failing(state, tmp_path, TRAIN)
    job_id = job.id
    assert found is not None
    first = found.first
    assert (first.rank, first.kind, first.why) == ("2", ff.EXCEPTION, "ValueError: shard 7 is corrupt")
    assert first.node == (job.nodes[0] if job.nodes else "") and first.source == ""
    assert first.line is not None and lines[first.line] == "[rank2]: ValueError: shard 7 is corrupt"
    stamped = next(line for line in lines if "loading shard 7" in line)
    assert first.time == datetime.fromisoformat(stamped.split()[1])
    assert sorted((c.rank, c.kind) for c in found.consequences) == [("0", ff.NCCL), ("1", ff.NCCL), ("3", ff.NCCL)]

    text = run_cli("failure", job_id)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("First failure: rank 2") and "ValueError: shard 7 is corrupt" in text.stdout
    answer = run_cli("failure", job_id, "--json")
    assert answer.returncode == 0, answer.stderr
    data = json.loads(answer.stdout)
    assert data["schema_version"] == 1 and data["errors"] == []
    assert data["failure"]["first"]["rank"] == "2" and data["failure"]["first"]["line"] == first.line
    assert data["failure"]["state"] == "failed" and len(data["failure"]["consequences"]) == 3


# A worker that dies without a word on its output, leaving only torchrun's error file (as ``@record`` writes it).
RECORD = r"""import json, os, sys, time
json.dump({"message": {"message": "Traceback (most recent call last):\n  ...\nRuntimeError: NaN loss at step 40",
           "extraInfo": {"py_callstack": "...", "timestamp": str(int(time.time()) - 5)}}},
          open(os.environ["TORCHELASTIC_ERROR_FILE"], "w"))
sys.exit(1)
"""


async def test_torchruns_error_file_is_set_per_job_and_read_back(state, tmp_path: Path):
    job, found, _ = await run_failing(state, tmp_path, RECORD)
    assert found is not None
    first = found.first
    assert (first.rank, first.node, first.kind) == ("0", local_host(), ff.EXCEPTION)
    assert first.why == "RuntimeError: NaN loss at step 40" and first.time_from == "torchrun's error file"
    assert first.time is not None and job.end_time is not None and first.time < job.end_time
    assert first.line is None  # nothing in the log to jump to
