"""The hub: failures become health and a message; old data is kept and marked stale."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
from waiting import async_wait_until

from yanflow_tui.backends import registry
from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import BackendError, ConfigError
from yanflow_tui.hub import MAX_BACKOFF, ClusterSnapshot, Health, Hub, error_text
from yanflow_tui.installs import extra_command
from yanflow_tui.model import Job, JobChanges, JobKind, JobList, JobState, Node


def job(i: int, cluster: str = "c") -> Job:
    return Job(id=str(i), cluster=cluster, name=f"j{i}", user="u", state=JobState.RUNNING)


class ScriptedBackend(Backend):
    """list_jobs / list_nodes follow a script: a value to return, an exception to raise, or "hang"."""

    kind = "scripted"
    capabilities = Capabilities(job_kinds=frozenset({JobKind.SINGLE}))

    def __init__(self, config, jobs_script=(), nodes_script=()):
        super().__init__(config)
        self.jobs_script = list(jobs_script)
        self.nodes_script = list(nodes_script)
        self.closed = False

    async def _play(self, script, default):
        step = script.pop(0) if script else default
        if step == "hang":
            await asyncio.Event().wait()  # never set: hangs until cancelled
        if isinstance(step, BaseException):
            raise step
        return step

    async def list_jobs(self):
        return await self._play(self.jobs_script, [])

    async def list_nodes(self):
        return await self._play(self.nodes_script, [])

    async def close(self):
        self.closed = True


def make_hub(*backends: ScriptedBackend, timeout: float = 5.0) -> Hub:
    config = Config(clusters=tuple(b.config for b in backends))
    return Hub(config, backends={b.name: b for b in backends}, timeout=timeout)


def scripted(name="c", refresh=5.0, **kwargs) -> ScriptedBackend:
    return ScriptedBackend(ClusterConfig(name, "local", refresh_seconds=refresh), **kwargs)


async def test_success_then_failure_keeps_old_jobs_marked_stale():
    old = [job(1), job(2)]
    hub = make_hub(scripted(jobs_script=[old, BackendError("ssh: connection refused\nsecond line")]))
    assert hub.snapshots["c"].health is Health.CONNECTING

    first = await hub.refresh("c")
    assert first.health is Health.OK
    assert first.jobs == tuple(old)
    assert first.updated is not None and first.failures == 0

    second = await hub.refresh("c")
    assert second.health is Health.STALE
    assert second.message == "ssh: connection refused"
    assert second.jobs == tuple(old)
    assert second.updated == first.updated
    assert second.failures == 1
    assert hub.snapshots["c"] is second
    assert hub.find_job("c", "2") == old[1]


async def test_recovery_clears_the_failure():
    hub = make_hub(scripted(jobs_script=[[job(1)], RuntimeError("boom"), [job(3)]]))
    await hub.refresh("c")
    assert (await hub.refresh("c")).health is Health.STALE
    snap = await hub.refresh("c")
    assert snap.health is Health.OK
    assert snap.message == "" and snap.failures == 0
    assert snap.jobs == (job(3),)


async def test_failure_before_any_success_is_an_error():
    hub = make_hub(scripted(jobs_script=[RuntimeError("no route to host")]))
    snap = await hub.refresh("c")
    assert snap.health is Health.ERROR
    assert snap.message == "RuntimeError: no route to host"
    assert snap.jobs == ()


async def test_hanging_backend_times_out():
    hub = make_hub(scripted(jobs_script=[[job(1)], "hang"]), timeout=0.2)
    await hub.refresh("c")
    start = time.monotonic()
    snap = await hub.refresh("c")
    assert time.monotonic() - start < 3
    assert snap.health is Health.STALE
    assert snap.message == "timed out"
    assert snap.jobs == (job(1),)


async def test_hanging_backend_without_data_is_an_error():
    hub = make_hub(scripted(nodes_script=["hang"]), timeout=0.2)
    snap = await hub.refresh("c")
    assert snap.health is Health.ERROR
    assert snap.message == "timed out"


async def test_refresh_only_what_is_asked():
    node = Node(cluster="c", name="n1", state="up")
    backend = scripted(jobs_script=[[job(1)], RuntimeError("jobs must not be read")], nodes_script=[[node]])
    hub = make_hub(backend)
    await hub.refresh("c")
    snap = await hub.refresh("c", jobs=False, nodes=False)
    assert snap.health is Health.OK
    assert snap.jobs == (job(1),) and snap.nodes == (node,)


async def test_a_snapshot_carries_the_answer_its_jobs_came_from_and_what_the_backend_said_changed():
    """A ``JobList`` answer: its serial and changes on the snapshot, kept as they are while the jobs
    are (a failure, a refresh of the nodes alone); a plain list: serial 0, changes not known."""
    first = JobList([job(1), job(2)])
    second = JobList([job(1), job(3)], JobChanges(first.serial, (job(3),), ("2",)))
    backend = scripted(jobs_script=[first, second, RuntimeError("down"), [job(4)]])
    hub = make_hub(backend)
    snap = await hub.refresh("c")
    assert (snap.jobs_serial, snap.job_changes) == (first.serial, None)
    snap = await hub.refresh("c")
    assert snap.jobs == (job(1), job(3))
    assert (snap.jobs_serial, snap.job_changes) == (second.serial, second.changes)
    for snap in (await hub.refresh("c"), await hub.refresh("c", jobs=False)):  # failed; nodes only
        assert snap.jobs == (job(1), job(3)) and (snap.jobs_serial, snap.job_changes) == (second.serial, second.changes)
    snap = await hub.refresh("c")
    assert snap.jobs == (job(4),) and (snap.jobs_serial, snap.job_changes) == (0, None)
    assert len({first.serial, second.serial, JobList().serial}) == 3 and 0 not in (first.serial, second.serial)


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("x"),
        KeyError("k"),
        ValueError(""),
        OSError(5, "I/O error"),
        TimeoutError(),
        ZeroDivisionError(),
        BackendError(""),
    ],
)
async def test_refresh_never_raises(exc):
    hub = make_hub(scripted(jobs_script=[exc], nodes_script=[exc]))
    snap = await hub.refresh("c")
    assert snap.health is Health.ERROR
    assert snap.message
    assert "\n" not in snap.message
    assert "Traceback" not in snap.message


async def test_refresh_never_raises_when_the_call_itself_fails():
    class Broken(ScriptedBackend):
        def list_jobs(self):  # not even a coroutine: raises on call
            raise AttributeError("half-built client")

    hub = make_hub(Broken(ClusterConfig("c", "local")))
    snap = await hub.refresh("c")
    assert snap.health is Health.ERROR
    assert snap.message == "AttributeError: half-built client"


async def test_refresh_propagates_cancellation():
    backend = scripted(jobs_script=["hang"])
    hub = make_hub(backend, timeout=60)
    task = asyncio.create_task(hub.refresh("c"))
    await async_wait_until(lambda: not backend.jobs_script, what="the refresh hanging in list_jobs")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_next_delay_backs_off_and_is_capped():
    hub = make_hub(scripted(refresh=5.0))
    assert hub.next_delay("c") == 5.0
    delays = []
    for failures in range(1, 12):
        hub.snapshots["c"] = ClusterSnapshot("c", "local", False, failures=failures)
        delays.append(hub.next_delay("c"))
    assert delays[:4] == [5.0, 10.0, 20.0, 40.0]
    assert all(b >= a for a, b in zip(delays, delays[1:]))
    assert max(delays) == MAX_BACKOFF
    assert delays[-1] == MAX_BACKOFF


def test_next_delay_has_a_floor_after_failures():
    hub = make_hub(scripted(refresh=0.5))
    assert hub.next_delay("c") == 0.5
    hub.snapshots["c"] = ClusterSnapshot("c", "local", False, failures=2)
    assert hub.next_delay("c") == 2.0


async def test_failures_count_up_through_refresh():
    hub = make_hub(scripted(refresh=2.0, jobs_script=[RuntimeError("a")] * 3))
    for expected in (1, 2, 3):
        assert (await hub.refresh("c")).failures == expected
    assert hub.next_delay("c") == 8.0


async def test_one_bad_cluster_does_not_affect_another():
    good = scripted("good", jobs_script=[[job(1, "good")]])
    bad = scripted("bad", jobs_script=[RuntimeError("down")])
    hub = make_hub(good, bad)
    snaps = await asyncio.gather(hub.refresh("good"), hub.refresh("bad"))
    assert [s.health for s in snaps] == [Health.OK, Health.ERROR]
    assert hub.names == ["good", "bad"]


async def test_unavailable_backend_is_an_error_with_one_line(register_backend):
    register_backend("yanflow_tui.backends.no_such_backend_module:SlurmBackend", "slurm")
    hub = Hub(Config(clusters=(ClusterConfig("hpc", "slurm"),)))
    backend = hub.backend("hpc")
    assert isinstance(backend, registry.UnavailableBackend)
    assert backend.kind == "slurm"
    snap = await hub.refresh("hpc")
    assert snap.health is Health.ERROR
    assert snap.message == "the slurm backend is not available in this version of yanflow-tui"
    # Still an error (not "stale") on the next round, and still one line.
    snap = await hub.refresh("hpc")
    assert snap.health is Health.ERROR and snap.failures == 2


async def test_backend_missing_a_package_says_which(tmp_path, monkeypatch, register_backend):
    (tmp_path / "needs_missing_pkg.py").write_text("import yanflow_definitely_missing_sdk\nclass B: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "needs_missing_pkg", raising=False)
    register_backend("needs_missing_pkg:B", "determined")
    hub = Hub(Config(clusters=(ClusterConfig("det", "determined"),)))
    snap = await hub.refresh("det")
    assert snap.health is Health.ERROR
    assert snap.message == (
        "the determined backend needs the Python package 'yanflow_definitely_missing_sdk'"
        f" ({extra_command('determined')})"  # the extra its plugin declares, for the way this copy was installed
    )


async def test_unknown_kind_is_unavailable():
    backend = registry.create(ClusterConfig("x", "nonsense"))
    assert isinstance(backend, registry.UnavailableBackend)
    with pytest.raises(BackendError, match="unknown cluster kind 'nonsense'"):
        await backend.list_jobs()


def test_register_a_class(register_backend):
    register_backend(ScriptedBackend, "slurm")
    backend = registry.create(ClusterConfig("s", "slurm"))
    assert type(backend) is ScriptedBackend


def test_unknown_cluster_name_is_a_config_error():
    hub = make_hub(scripted())
    with pytest.raises(ConfigError, match="no cluster named 'zzz'"):
        hub.backend("zzz")


def test_cluster_for_submit():
    hub = make_hub(scripted("a"), scripted("b"))
    assert hub.cluster_for_submit(None, None, JobKind.SINGLE) == "a"
    assert hub.cluster_for_submit("b", "a", JobKind.SINGLE) == "b"
    assert hub.cluster_for_submit(None, "b", JobKind.SINGLE) == "b"
    with pytest.raises(BackendError, match="no configured cluster runs slurm jobs"):
        hub.cluster_for_submit(None, None, JobKind.SLURM)
    with pytest.raises(ConfigError):
        hub.cluster_for_submit("zzz", None, JobKind.SINGLE)


async def test_close_closes_every_backend_even_if_one_fails():
    class BadClose(ScriptedBackend):
        async def close(self):
            raise RuntimeError("close failed")

    bad = BadClose(ClusterConfig("bad", "local"))
    good = scripted("good")
    hub = make_hub(bad, good)
    await hub.close()
    assert good.closed


@pytest.mark.parametrize(
    "exc, text",
    [
        (TimeoutError(), "timed out"),
        (TimeoutError(), "timed out"),
        (BackendError("first\nsecond"), "first"),
        (BackendError(""), "BackendError"),
        (RuntimeError("first\nsecond"), "RuntimeError: first"),
        (KeyError("k"), "KeyError: 'k'"),
        (RuntimeError(), "RuntimeError"),
    ],
)
def test_error_text(exc, text):
    assert error_text(exc) == text


def test_a_backend_whose_constructor_crashes_becomes_unavailable(register_backend):
    from yanflow_tui.backends import registry
    from yanflow_tui.backends.registry import UnavailableBackend
    from yanflow_tui.config import ClusterConfig

    class Broken:
        def __init__(self, config):
            raise RuntimeError("kubeconfig is garbage")

    register_backend(Broken, "broken")
    backend = registry.create(ClusterConfig("b", "broken"))
    assert isinstance(backend, UnavailableBackend)
    assert "failed to start: RuntimeError: kubeconfig is garbage" in backend.reason


async def test_a_healthy_cluster_carries_its_backends_notice():
    class Noting(ScriptedBackend):
        note = ""

        @property
        def notice(self):
            return self.note

    backend = Noting(ClusterConfig("c", "local"))
    hub = make_hub(backend)
    assert (await hub.refresh("c")).message == ""
    backend.note = "history needs accounting"
    snap = await hub.refresh("c")
    assert snap.health is Health.OK and snap.message == "history needs accounting"
