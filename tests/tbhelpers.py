"""TensorBoard event files for the curves tests, written and read by the ``tensorboard`` package
itself: ``WRITER`` is a training-like script (run by a local or Slurm job, or in-process) that writes
scalars with ``EventFileWriter`` (``simple_value`` tags, a tensor scalar from the scalars plugin's
own ``scalar_pb``, and a second run in a subdirectory), waits for a go-file, then appends more; and
``loader_points`` reads a log directory back with ``EventFileLoader``, the loader TensorBoard uses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import psutil

from yanflow_tui import tensorboards
from yanflow_tui.model import JobSpec
from yanflow_tui.spec import spec_from_data

WRITER = """
import os, sys, time
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.scalar import summary_v2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

logdir, first, go, second = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
train = EventFileWriter(logdir, flush_secs=3600)
evals = EventFileWriter(os.path.join(logdir, "eval"), flush_secs=3600)

def write(step):
    value = summary_pb2.Summary.Value
    scalars = summary_pb2.Summary(value=[
        value(tag="loss", simple_value=2.0 / (step + 1) + (step % 3) * 0.01),
        value(tag="accuracy", simple_value=1.0 - 1.0 / (step + 2)),
    ])
    train.add_event(event_pb2.Event(step=step, wall_time=time.time(), summary=scalars))
    lr = summary_v2.scalar_pb("lr", 0.1 * 0.97 ** step)  # a tensor scalar, as tf.summary / torch write them
    train.add_event(event_pb2.Event(step=step, wall_time=time.time(), summary=lr))
    if step % 5 == 0:
        evals.add_event(event_pb2.Event(step=step, wall_time=time.time(),
                        summary=summary_pb2.Summary(value=[value(tag="accuracy", simple_value=0.5 + step / 1000)])))

for step in range(first):
    write(step)
train.flush(); evals.flush()
print("first part written", flush=True)
if second:
    while not os.path.exists(go):
        time.sleep(0.05)
    for step in range(first, first + second):
        write(step)
train.close(); evals.close()
print("all written", flush=True)
"""


def write_script(directory: Path) -> Path:
    path = directory / "tb_writer.py"
    path.write_text(WRITER)
    return path


def writer_command(script: Path, logdir: str, first: int, go: Path, second: int) -> list[str]:
    """The argv a job runs: this interpreter (it has tensorboard) running ``WRITER``."""
    return [sys.executable, str(script), logdir, str(first), str(go), str(second)]


def loader_points(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of every scalar under ``logdir``, as TensorBoard's ``EventFileLoader``
    reads them (after its data_compat migration every scalar is a one-element tensor); a tag of a
    subdirectory's files is ``RUN/TAG``, their names in path order."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out: dict[str, list[tuple[int, float]]] = {}
    files = sorted(str(p) for p in logdir.rglob("events.out.tfevents.*"))
    for path in files:
        run = os.path.relpath(os.path.dirname(path), logdir)
        prefix = "" if run == "." else run + "/"
        for event in EventFileLoader(path).Load():
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "scalars":
                    continue
                number = float(tensor_util.make_ndarray(value.tensor).item())
                out.setdefault(prefix + value.tag, []).append((int(event.step), number))
    return out


def curve_points(curves) -> dict[str, list[tuple[int, float]]]:
    """A ``Curves`` (or its JSON) as tag -> [(step, value)], for comparing with ``loader_points``."""
    series = curves if isinstance(curves, dict) else curves.to_json()
    return {tag: [(int(p["step"]), float(p["value"])) for p in points] for tag, points in series.items()}


def loader_wall_times(logdir: Path) -> dict[str, list[float]]:
    """tag -> [wall time] of every scalar under ``logdir``, as ``EventFileLoader`` reads them."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out: dict[str, list[float]] = {}
    for path in sorted(str(p) for p in logdir.rglob("events.out.tfevents.*")):
        run = os.path.relpath(os.path.dirname(path), logdir)
        prefix = "" if run == "." else run + "/"
        for event in EventFileLoader(path).Load():
            for value in event.summary.value if event.HasField("summary") else ():
                if value.metadata.plugin_data.plugin_name == "scalars":
                    out.setdefault(prefix + value.tag, []).append(float(event.wall_time))
    return out


async def open_curves(pilot, app, cluster: str, job_id: str, logdir: Path, first: int):
    """Opens the job's detail screen in ``app`` and waits for its curves view to hold ``first`` losses,
    the same points as TensorBoard's loader reads from ``logdir``; returns the view."""
    from uihelpers import refreshed
    from waiting import wait_for

    from yanflow_tui.screens.detail import JobDetailScreen
    from yanflow_tui.screens.widgets.curves import CurvesView

    await refreshed(pilot, app)
    job = next(j for j in app.hub.snapshots[cluster].jobs if j.id == job_id)
    app.push_screen(JobDetailScreen(job))
    view = await wait_for(
        pilot,
        lambda: isinstance(app.screen, JobDetailScreen) and next(iter(app.screen.query(CurvesView)), None),
    )
    await wait_for(pilot, lambda: len(view.curves.series.get("loss", [])) == first, what="the first part")
    assert curve_points(view.curves) == loader_points(logdir)
    return view


async def curves_appended(pilot, view, logdir: Path, total: int) -> None:
    """Waits for the curves view to hold ``total`` losses and the same points as the loader reads."""
    from waiting import wait_for

    await wait_for(pilot, lambda: len(view.curves.series.get("loss", [])) == total, what="the appended part")
    await wait_for(pilot, lambda: curve_points(view.curves) == loader_points(logdir))


def scalars_api(url: str, timeout: float = 5.0) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """run -> tag -> [(step, value)], as a running TensorBoard's scalars API at ``url`` gives them
    (``/data/plugin/scalars/tags``, then ``/data/plugin/scalars/scalars?run=..&tag=..`` for each)."""
    import json
    import urllib.parse
    import urllib.request

    def get(path: str):
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as answer:
            return json.load(answer)

    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for run, tags in get("/data/plugin/scalars/tags").items():
        for tag in tags:
            query = urllib.parse.urlencode({"run": run, "tag": tag})
            rows = get(f"/data/plugin/scalars/scalars?{query}")
            out.setdefault(run, {})[tag] = [(int(step), float(value)) for _, step, value in rows]
    return out


def api_points(url: str) -> dict[str, list[tuple[int, float]]]:
    """The scalars API's points named as ``loader_points`` names them (``RUN/TAG``; "." is the top)."""
    try:
        found = scalars_api(url)
    except OSError:
        return {}
    return {
        (tag if run == "." else f"{run}/{tag}"): points for run, tags in found.items() for tag, points in tags.items()
    }


def tensorboard_processes() -> list[int]:
    """The pids of ``tensorboard.main`` servers this machine runs (for "stopping left none")."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if "tensorboard.main" in cmdline[:3] or tensorboards.WRAPPER in cmdline[:3]:  # (not a shell that names it)
            found.append(proc.info["pid"])
    return found


async def get(url: str) -> tuple[int, str]:
    """An HTTP GET in a thread: a forward it goes through may run on the test's own event loop."""

    def fetch() -> tuple[int, str]:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()

    return await asyncio.to_thread(fetch)


async def scalars_match(url: str, runs: Path) -> bool:
    """TensorBoard's scalars API at ``url`` gives what its own loader reads from ``runs``."""
    return await asyncio.to_thread(api_points, url) == loader_points(runs)


def servers_over(logdir) -> list[psutil.Process]:
    """The TensorBoard servers running over ``logdir`` (whoever started them)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if ("tensorboard.main" in cmdline[:3] or tensorboards.WRAPPER in cmdline[:3]) and str(logdir) in cmdline:
            found.append(proc)
    return found


def slurm_writer_spec(tmp_path: Path, name: str, first: int, second: int) -> JobSpec:
    """A Slurm job on the cpu partition running ``WRITER`` over ``tmp_path/runs`` (its
    ``tensorboard.logdir``): ``first`` steps, then ``second`` more once ``tmp_path/go`` exists."""
    command = shlex.join(writer_command(write_script(tmp_path), "runs", first, tmp_path / "go", second))
    return spec_from_data(
        {
            "name": name,
            "kind": "slurm",
            "command": command,
            "workdir": str(tmp_path),
            "resources": {"cpus": 1, "memory": "500M"},
            "slurm": {"partition": "cpu", "time": "00:05:00", "output": str(tmp_path / "out.log")},
            "tensorboard": {"logdir": "runs"},
        }
    )


@contextlib.asynccontextmanager
async def tensorboard_cli(*args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """``yanflow-tui tensorboard ARGS`` in a process of its own, and the URL it printed; killed after
    the block if it still runs. Its stderr goes to a file that ``ctrl_c`` shows on a failure."""
    with tempfile.TemporaryFile() as stderr:
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "yanflow_tui", "tensorboard", *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=stderr,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"}, preexec_fn=sigint_as_in_a_terminal,
        )  # fmt: skip
        _STDERR[cli.pid] = stderr
        assert cli.stdout is not None
        try:
            yield cli, (await asyncio.wait_for(cli.stdout.readline(), 120)).decode().strip()
        finally:
            _STDERR.pop(cli.pid, None)
            if cli.returncode is None:
                cli.kill()
                await cli.wait()


_STDERR: dict[int, IO[bytes]] = {}


def sigint_as_in_a_terminal() -> None:
    """In the child, before exec: SIGINT at its default, as a command typed in a terminal has it. A test run
    started in the background by a non-interactive shell (``pytest &``) has SIGINT ignored, every child
    inherits that, and a Ctrl-C sent to it would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal_masks(pid: int) -> str:
    """The process's blocked, ignored and caught signals (``/proc/PID/status``): SIGINT is bit 1 (0x2)."""
    with contextlib.suppress(OSError):
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        return " ".join(line.replace("\t", "") for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
    return "(gone)"


async def ctrl_c(cli: asyncio.subprocess.Process, timeout: float) -> int:
    """Ctrl-C (SIGINT) to the CLI, and its exit code; if it still runs after ``timeout``, a failure that shows
    every thread's stack (faulthandler on SIGABRT), its stderr and its signal masks before the Ctrl-C."""
    masks = _signal_masks(cli.pid)
    cli.send_signal(signal.SIGINT)
    try:
        return await asyncio.wait_for(cli.wait(), timeout)
    except (TimeoutError, asyncio.TimeoutError):
        with contextlib.suppress(ProcessLookupError):
            cli.send_signal(signal.SIGABRT)
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(cli.wait(), 10)
        stderr = _STDERR.get(cli.pid)
        said = b""
        if stderr is not None:
            stderr.seek(0)
            said = stderr.read()[-8000:]
        raise AssertionError(
            f"the CLI still ran {timeout:.0f} s after Ctrl-C (masks before it: {masks}); its stderr:\n"
            + said.decode("utf-8", "replace")
        ) from None


def secret_prefix(url: str) -> tuple[str, str]:
    """(the URL without its secret path prefix, the prefix); the URL must have one. A request without it
    gets no curves, and the prefix is in no process's argv (what ``ps`` shows every user)."""
    found = re.fullmatch(r"(http://127\.0\.0\.1:\d+/)([\w-]{20,})/", url)
    assert found, url
    bare, prefix = found.groups()
    assert api_points(bare) == {}
    for path in ("data/plugin/scalars/tags", "data/runs", "", "data/logdir"):
        try:
            with urllib.request.urlopen(bare + path, timeout=10) as answer:
                assert b"loss" not in answer.read(), path
        except urllib.error.HTTPError:
            pass
    for proc in psutil.process_iter(["cmdline"]):
        assert prefix not in " ".join(proc.info.get("cmdline") or [])
    return bare, prefix
