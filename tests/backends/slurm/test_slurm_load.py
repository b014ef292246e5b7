"""Light on slurmctld (issue 18 point 10, issue 10 point 8): the commands one console sends per
simulated minute, through a recording transport and the real Hub refresh schedule, with a queue of
4,008 array tasks and a job whose name holds a newline. ``benchmarks/slurm_rpcs.py`` measures the
same on the real test cluster with ``sdiag``."""

from __future__ import annotations

import pytest
from paths import DATA as TEST_DATA

from yanflow_tui.backends.slurm import backend as slurm_module
from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import Result, Transport
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import Hub

DATA = TEST_DATA / "slurm"
ME = "alice"  # what ``id -un`` answers; $USER is deliberately something else


def text_row(job_id: str, user: str, name: str, array: str = "", task: str = "", state: str = "RUNNING") -> str:
    fields = {
        "job_id": job_id,
        "array_job_id": array or job_id,
        "array_task": task or "N/A",
        "state": state,
        "reason": "None",
        "user": user,
        "node_count": "1",
        "nodes": "gpu01",
        "tres_per_node": "N/A",
        "submit": "1795953600",
        "start": "1795953600",
        "end": "1795960800",
        "partition": "gpu",
        "account": "(null)",
        "qos": "normal",
        "time_limit": "1:00:00",
        "cpus": "1",
        "display_id": f"{array}_{task}" if array else job_id,
        "name": name,
    }
    return parse.SEP.join(fields[f] for f, _ in parse.SQUEUE_FIELDS)


class RecordingTransport(Transport):
    """Answers squeue/sinfo/sacct/id like a cluster with 4,008 array tasks (bob's) and two jobs of
    alice's, one named with a newline; records every argv (``history``)."""

    def __init__(self, ambiguous: bool = True):
        super().__init__()
        rows = [text_row(str(2000 + i), "bob", "sweep", array="1000", task=str(i)) for i in range(4008)]
        rows.append(text_row("3001", ME, "train"))
        rows.append(text_row("3002", ME, "evil\nname" if ambiguous else "plain"))
        self.rows = rows
        self.json_text = (DATA / "squeue.json").read_text()
        self.sinfo_text = (DATA / "sinfo.json").read_text()

    async def _exec(self, script: str):  # pragma: no cover - run() is answered directly
        raise AssertionError("no shell here")

    async def _stream(self, script: str):  # pragma: no cover - no logs here
        raise AssertionError("no streams here")

    async def run(self, argv, stdin_data=None, timeout=None) -> Result:
        argv = tuple(str(a) for a in argv)
        self.history.append(argv)
        if argv[:2] == ("id", "-un"):
            return Result(argv, 0, f"{ME}\n", "")
        if argv[0] == "squeue" and "--json" in argv:
            return Result(argv, 0, self.json_text, "")
        if argv[0] == "squeue":
            user = argv[argv.index("-u") + 1] if "-u" in argv else None
            rows = [r for r in self.rows if user is None or r.split(parse.SEP)[5] == user]
            return Result(argv, 0, "\n".join(rows) + "\n", "")
        if argv[0] == "sinfo":
            return Result(argv, 0, self.sinfo_text, "")
        if argv[0] == "sacct":
            return Result(argv, 1, "", "sacct: error: Slurm accounting storage is disabled")
        return Result(argv, 1, "", f"{argv[0]}: unexpected here")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(slurm_module, "clock", fake)  # the backend's clock alone: the event loop keeps its own
    return fake


def simulated_minutes(hub: Hub, clock: Clock, minutes: int, invalidate_at: set[int] = frozenset()):
    """Refresh the way the app's loop does, at the cluster's interval, for ``minutes`` minutes."""

    async def go():
        step = hub.next_delay("hpc")
        t = 0.0
        while t < minutes * 60:
            if int(t) in invalidate_at:
                hub.backend("hpc").invalidate()
            await hub.refresh("hpc")
            clock.now += step
            t += step

    return go()


def squeues(transport) -> list[tuple[str, ...]]:
    return [argv for argv in transport.history if argv[0] == "squeue"]


def sinfos(transport) -> list[tuple[str, ...]]:
    return [argv for argv in transport.history if argv[0] == "sinfo"]


def make_hub(transport: Transport) -> Hub:
    config = Config(clusters=(ClusterConfig("hpc", "slurm", refresh_seconds=10.0),))
    return Hub(config, backends={"hpc": SlurmBackend(config.clusters[0], transport)})


async def test_my_jobs_are_filtered_on_the_server_with_the_transports_user(clock, monkeypatch):
    monkeypatch.setenv("USER", "mallory")  # never $USER
    transport = RecordingTransport(ambiguous=False)
    hub = make_hub(transport)
    hub.backend("hpc").set_all_users(False)  # the console starts on "mine"
    await simulated_minutes(hub, clock, 1)
    assert squeues(transport) and all(argv[argv.index("-u") + 1] == ME for argv in squeues(transport))
    assert {j.id for j in hub.snapshots["hpc"].jobs} == {"3001", "3002"}
    hub.backend("hpc").set_all_users(True)  # u
    await hub.refresh("hpc")
    assert "-u" not in squeues(transport)[-1]
    assert len(hub.snapshots["hpc"].jobs) > 4000


@pytest.mark.parametrize("mine", [True, False], ids=["mine", "all-users"])
async def test_at_most_6_job_and_2_node_queries_a_minute_with_4008_tasks_and_an_ambiguous_name(clock, mine):
    transport = RecordingTransport(ambiguous=True)
    hub = make_hub(transport)
    hub.backend("hpc").set_all_users(not mine)
    minutes = 5
    await simulated_minutes(hub, clock, minutes)
    assert hub.snapshots["hpc"].health.value == "ok", hub.snapshots["hpc"].message
    # 6 refreshes a minute at the default 10 s, one query each; once, when the ambiguity is first
    # seen, that refresh also reads JSON (the old code did so on every refresh: 12 a minute)
    assert len(squeues(transport)) <= 6 * minutes + 1, [a[:6] for a in squeues(transport)[:14]]
    assert len(sinfos(transport)) <= 2 * minutes
    # the newline job is still shown: the JSON answer replaced the ambiguous text
    assert any(argv[-1] == "--json" for argv in squeues(transport))


async def test_r_refetches_the_nodes_at_once(clock):
    transport = RecordingTransport(ambiguous=False)
    hub = make_hub(transport)
    await simulated_minutes(hub, clock, 1)
    before = len(sinfos(transport))
    hub.backend("hpc").invalidate()
    await hub.refresh("hpc")
    assert len(sinfos(transport)) == before + 1


async def test_the_console_starts_on_mine_and_u_asks_for_everyone(home, monkeypatch, clock):
    """The app tells each backend the view it starts in; ``u`` then asks for every user."""
    from waiting import wait_for

    from yanflow_tui.app import YanflowApp

    transport = RecordingTransport(ambiguous=False)
    hub = make_hub(transport)
    app = YanflowApp(hub.config, hub)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: squeues(transport), what="a squeue")
        assert all("-u" in argv and argv[argv.index("-u") + 1] == ME for argv in squeues(transport))
        count = len(squeues(transport))
        await pilot.press("u")
        await wait_for(pilot, lambda: len(squeues(transport)) > count, what="a squeue after u")
        assert "-u" not in squeues(transport)[-1]
