"""The first failure across ranks on the real Slurm test cluster: a 3-node job (our own sbatch script,
launcher ``none``) whose rank on the second node raises a few seconds in, while the other two hang and
then fail with an NCCL watchdog timeout (printed as torch prints it). The answer (``failureevidence``
over ``SlurmBackend``: each rank's own file, its mtime, srun's lines) names that node, its rank, the
exception line and the time it carries; the others are consequences."""

from __future__ import annotations

import uuid
from datetime import datetime

from slurmhelpers import JOBS, live_state, slurm, ssh_cluster
from waiting import async_wait_until

from yanflow_tui import firstfailure as ff
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.script import render
from yanflow_tui.failureevidence import find_first_failure
from yanflow_tui.spec import spec_from_data

# Rank 1 prints its time, raises after 3 s and prints the traceback, then waits (at most 60 s) until the
# others have timed out before it exits 1; ranks 0 and 2 wait for the raise, then print torch's watchdog
# line with their own later time and exit 1 once both have printed (--kill-on-bad-exit stops whatever is
# left when the first exits, so one that exits early could stop the other before its line).
TRAIN = """import datetime, os, sys, time, traceback
rank, marker = int(os.environ["NODE_RANK"]), sys.argv[1]
now = lambda: datetime.datetime.now(datetime.timezone.utc)
def wait_for(*names):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(os.path.exists(n) for n in names):
        time.sleep(0.05)
print(f"{now().isoformat()} rank {rank}: started", flush=True)
if rank == 1:
    time.sleep(3)
    print(f"{now().isoformat()} rank 1: loading shard 7", flush=True)
    try:
        raise ValueError(f"shard 7 is corrupt ({marker})")
    except ValueError:
        traceback.print_exc()
        sys.stderr.flush()
    open(f"raised-{marker}", "w").close()
    wait_for(f"timedout-{marker}-0", f"timedout-{marker}-2")
    sys.exit(1)
wait_for(f"raised-{marker}")
time.sleep(1)
t = now()
print(f"[rank{rank}]:[E{t:%m%d %H:%M:%S.%f} 811 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
      "600042 milliseconds before timing out.", flush=True)
open(f"timedout-{marker}-{rank}", "w").close()
wait_for(f"timedout-{marker}-0", f"timedout-{marker}-2")  # else srun may stop the other before it prints
sys.exit(1)
"""


async def test_the_second_nodes_exception_is_the_first_failure(slurm_jobs):
    root = JOBS / f"failure-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    marker = uuid.uuid4().hex[:10]
    spec = spec_from_data(
        {
            "name": "failure-ranks",
            "kind": "multi-node",
            "launcher": "none",
            "command": ["python3", "train.py", marker],
            "workdir": str(root),
            "resources": {"nodes": 3, "gpus": 1, "cpus": 1, "memory": "1G"},
            "slurm": {"partition": "gpu", "time": "00:05:00", "output": str(root / "%x-%j.out")},
        }
    )
    rendered = render(spec, f"test-{marker[:6]}")
    job_id = slurm_jobs.add(slurm(*rendered.argv, input=rendered.script).strip().split(";")[0])
    await async_wait_until(lambda: live_state(job_id) in ("FAILED", "COMPLETED", "CANCELLED", None), 180, "ended")
    backend = SlurmBackend(ssh_cluster())
    try:
        job = await backend.get_job(job_id)
        found = await find_first_failure(backend, job, 60)
    finally:
        await backend.close()
    assert found is not None
    first = found.first
    assert len(job.nodes) == 3, job.nodes
    assert (first.rank, first.node, first.kind) == ("1", job.nodes[1], ff.EXCEPTION), found.to_dict()
    assert first.why == f"ValueError: shard 7 is corrupt ({marker})"
    assert first.source == "rank 1" and first.line is not None
    rank1 = (root / f"failure-ranks-{job_id}.out.rank1").read_text().splitlines()
    assert rank1[first.line] == first.why  # the line the jump lands on
    stamped = next(line for line in rank1 if "loading shard 7" in line)
    assert first.time == datetime.fromisoformat(stamped.split()[0]) and first.time_from == "the log before it"
    assert {(c.rank, c.kind) for c in found.consequences} >= {("0", ff.NCCL), ("2", ff.NCCL)}, found.to_dict()
    assert all(c.time and c.time > first.time for c in found.consequences if c.kind == ff.NCCL)
