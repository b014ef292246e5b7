"""Logs, metrics and checkpoints from the fake Determined master: a followed task log that grows
while we watch (with ranks), metric points in = points out, and checkpoint downloads that are
atomic even when the connection drops mid-tar or the tar tries to escape its directory."""

from __future__ import annotations

import asyncio
import io
import os
import tarfile

import pytest
from dethelpers import CMD_ID

from yanflow_tui.errors import BackendError
from yanflow_tui.model import LogLine, MetricPoint


async def _next(stream, timeout=10.0):
    return await asyncio.wait_for(stream.__anext__(), timeout)


async def test_followed_log_grows_while_watched_and_carries_ranks(backend, master):
    task = "12.120"
    master.add_log(task, "rank zero starts", rank=0)
    master.add_log(task, "rank one starts", rank=1)
    stream = backend.stream_logs("trial-120", follow=True)
    assert await _next(stream) == LogLine("trial-120", "rank zero starts", "rank 0")
    assert await _next(stream) == LogLine("trial-120", "rank one starts", "rank 1")
    master.call(master.add_log, task, "epoch 1 loss=0.5", 0)
    assert await _next(stream) == LogLine("trial-120", "epoch 1 loss=0.5", "rank 0")
    master.call(master.add_log, task, "epoch 2 loss=0.4", 1)
    assert await _next(stream) == LogLine("trial-120", "epoch 2 loss=0.4", "rank 1")
    master.call(master.finished_tasks.add, task)
    with pytest.raises(StopAsyncIteration):
        await _next(stream)
    query = next(r.query for r in master.requests if r.path == f"/api/v1/tasks/{task}/logs")
    assert query["follow"] == ["true"]


async def test_closing_a_followed_stream_stops_it(backend, master):
    master.add_log(CMD_ID, "hello")
    stream = backend.stream_logs(f"cmd-{CMD_ID[:8]}", follow=True)
    assert (await _next(stream)).text == "hello"
    await stream.aclose()
    assert not backend._streams  # the worker was told to stop


async def test_command_log_without_follow_ends(backend, master):
    for i in range(3):
        master.add_log(CMD_ID, f"line {i}")
    lines = [line async for line in backend.stream_logs(f"cmd-{CMD_ID[:8]}")]
    assert [line.text for line in lines] == ["line 0", "line 1", "line 2"]
    assert {line.source for line in lines} == {""}
    with pytest.raises(BackendError, match="3 trials"):
        [line async for line in backend.stream_logs("exp-12")]


async def test_a_log_read_faster_than_it_is_consumed_loses_nothing(backend, master, monkeypatch):
    from yanflow_tui.backends.determined import backend as determined

    monkeypatch.setattr(determined, "LOG_QUEUE", 4)  # the reader thread gets far ahead of a slow console
    for i in range(40):
        master.add_log(CMD_ID, f"line {i}")
    stream = backend.stream_logs(f"cmd-{CMD_ID[:8]}")
    first = await _next(stream)
    # The slow console: time passes while the reader thread is far ahead and must wait, not drop (the
    # scenario itself; a blocked thread shows nothing to wait on).
    await asyncio.sleep(1.0)

    async def drain():
        return [line.text async for line in stream]

    rest = await asyncio.wait_for(drain(), 20)  # a dropped end marker would leave it waiting
    assert [first.text] + rest == [f"line {i}" for i in range(40)]


async def test_metrics_of_a_trial(backend, master):
    master.add_metrics(120, "training", [(10, {"loss": 0.9, "lr": 0.01}), (20, {"loss": 0.7, "lr": 0.01})])
    master.add_metrics(120, "validation", [(20, {"validation_loss": 0.5, "accuracy": 0.8})])
    points = await backend.metrics("trial-120")
    assert points == [
        MetricPoint("loss", 10, 0.9),
        MetricPoint("lr", 10, 0.01),
        MetricPoint("loss", 20, 0.7),
        MetricPoint("lr", 20, 0.01),
        MetricPoint("accuracy", 20, 0.8, "validation"),
        MetricPoint("validation_loss", 20, 0.5, "validation"),
    ]
    with pytest.raises(BackendError, match="per trial"):
        await backend.metrics("exp-12")


def _payload(n: int) -> bytes:
    return os.urandom(n)  # incompressible, so the gzip'd tar is about this big


async def test_checkpoint_download_interrupted_then_completed(backend, master, tmp_path):
    model = _payload(400_000)
    master.add_checkpoint(120, "ckpt-1", {"model.pth": model, "meta/info.json": b'{"steps": 200}'}, exp_id=12)
    (ckpt,) = await backend.checkpoints("trial-120")
    assert (ckpt.uuid, ckpt.job_id, ckpt.steps, ckpt.state) == ("ckpt-1", "trial-120", 200, "COMPLETED")
    assert ckpt.metrics == (("validation_loss", 0.25),) and ckpt.size_bytes == 400_000 + 14
    assert [c.uuid for c in await backend.checkpoints("exp-12")] == ["ckpt-1"]

    target = tmp_path / "out" / "ckpt-1"
    seen: list[tuple[int, int | None]] = []
    master.drop_checkpoint_after = 100_000
    with pytest.raises(BackendError, match="interrupted|incomplete"):
        await backend.download_checkpoint(ckpt, target, lambda done, total: seen.append((done, total)))
    assert not target.exists()
    assert os.listdir(tmp_path / "out") == []  # no partial left that could look complete
    assert seen and seen[-1][0] < seen[-1][1]

    master.drop_checkpoint_after = None
    seen.clear()
    assert await backend.download_checkpoint(ckpt, target, lambda d, t: seen.append((d, t))) == target
    assert (target / "model.pth").read_bytes() == model
    assert (target / "meta" / "info.json").read_bytes() == b'{"steps": 200}'
    assert seen[-1][0] == seen[-1][1] == len(master.checkpoint_tars["ckpt-1"])
    assert sorted(os.listdir(tmp_path / "out")) == ["ckpt-1"]
    with pytest.raises(BackendError, match="already exists"):
        await backend.download_checkpoint(ckpt, target)


async def test_checkpoint_tar_cannot_write_outside_the_target(backend, master, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    master.checkpoint_tars["evil"] = buf.getvalue()
    from yanflow_tui.model import Checkpoint

    target = tmp_path / "dl" / "evil"
    with pytest.raises(BackendError, match="damaged|outside"):
        await backend.download_checkpoint(Checkpoint("evil", "trial-120"), target)
    assert not target.exists() and not (tmp_path / "dl" / "escaped.txt").exists()
    assert os.listdir(tmp_path / "dl") == []


async def test_unknown_checkpoint_is_a_clear_error(backend, tmp_path):
    from yanflow_tui.model import Checkpoint

    with pytest.raises(BackendError, match="download failed"):
        await backend.download_checkpoint(Checkpoint("nope", "trial-120"), tmp_path / "x")
    assert not (tmp_path / "x").exists()


async def test_a_broken_followed_stream_is_reopened_without_losing_or_repeating_lines(backend, master):
    task = "12.121"
    for i in range(3):
        master.add_log(task, f"line {i}")
    master.drop_logs_after = 2  # the first stream breaks after two lines
    stream = backend.stream_logs("trial-121", follow=True)
    assert [(await _next(stream)).text for _ in range(3)] == ["line 0", "line 1", "line 2"]
    master.call(master.add_log, task, "line 3")
    assert (await _next(stream)).text == "line 3"
    master.call(master.finished_tasks.add, task)
    with pytest.raises(StopAsyncIteration):
        await _next(stream)
    opens = [r.query for r in master.requests if r.path == f"/api/v1/tasks/{task}/logs"]
    assert len(opens) == 2 and "timestampAfter" not in opens[0]
    assert opens[1]["timestampAfter"] == ["2026-11-29T12:00:00.999999Z"]  # just before line 1's time
