"""Read-only runs no mutating command on a Slurm cluster (issue 28 point 2): the read-only sweep
(``sweephelpers.sweep``) over the REAL loopback cluster, with every command line and script the
transport sends recorded and checked for a Slurm verb that changes anything (``sbatch``, ``srun``,
``scancel``, its signals too, ``scontrol update|hold|requeue...``). Recorded at the transport, not counted
with ``sdiag``: the cluster is shared, and others' jobs move its RPC counts meanwhile."""

from __future__ import annotations

import re
from dataclasses import replace

from slurmhelpers import slurm, ssh_cluster
from sweephelpers import sweep
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.screens.queue import JobTable

MUTATING = re.compile(
    r"\b(sbatch|srun|salloc|sattach|scancel|sacctmgr|strigger)\b"
    r"|\bscontrol\b[^\n;|&]*?\b(update|hold|uhold|release|requeue|requeuehold|suspend|resume|top|notify|create"
    r"|delete|reconfigure|shutdown|reboot|takeover)\b"
)


def test_the_check_sees_every_mutating_verb():
    for sent in ("sbatch --parsable", "scontrol update JobId=1 TimeLimit=5", "scontrol -d hold 12", "scancel 3"):
        assert MUTATING.search(sent), sent
    for sent in ("squeue --json", "scontrol show job -dd 12", "sinfo -N", "sacct -j 1", "sstat -j 1"):
        assert not MUTATING.search(sent), sent


async def test_a_read_only_sweep_runs_no_mutating_slurm_command(home, monkeypatch, slurm_dir):
    monkeypatch.setenv("EDITOR", "true")
    sent: list[str] = []
    run = Transport.run

    async def recorded_run(self, argv, *args, **kwargs):
        sent.append(" ".join(argv))
        return await run(self, argv, *args, **kwargs)

    def wrap(real):
        async def recorded(self, script, *args, **kwargs):
            sent.append(script)
            return await real(self, script, *args, **kwargs)

        return recorded

    monkeypatch.setattr(Transport, "run", recorded_run)
    for cls in set(_subclasses(Transport)):
        for name in ("_exec", "_stream"):
            if name in cls.__dict__:
                monkeypatch.setattr(cls, name, wrap(cls.__dict__[name]))
    job = slurm("sbatch", "--parsable", "-J", "ro-sweep", "-o", "/dev/null", "--wrap", "sleep 600").strip()
    job = job.split(";")[0]
    try:
        config = replace(ssh_cluster(), refresh_seconds=1.0)
        row = f"{config.name}/{job}"
        app = make_app(config, read_only=True)
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: row in app.screen.query_one(JobTable).row_keys, what=row, timeout=60)
            done = await sweep(pilot, app, rows=[row])
    finally:
        slurm("scancel", job, check=False)
    assert done["details"] == [row] and done["palette"]
    assert any("squeue" in s for s in sent), sent[:5]  # the sweep did read through the transport
    writes = sorted({s[:200] for s in sent if MUTATING.search(s)})
    assert not writes, "mutating commands sent in read-only mode:\n" + "\n".join(writes)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)
