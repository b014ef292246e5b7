"""A followed Slurm log survives a dropped SSH connection and resumes where it stopped, with no line
lost or repeated: the backend, the CLI and the console against the REAL loopback cluster through a
private sshd that the tests fault (``kill_sessions``, ``stop``/``start``); the byte-offset reader
itself (truncation, a partial first line, non-UTF-8 bytes) against local files."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from private_sshd import PrivateSshd
from slurmhelpers import JOBS, live_state, slurm
from uihelpers import log_lines, make_app, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.logs import FileFollower, Status
from yanflow_tui.backends.slurm.transport import LineStream, LocalTransport
from yanflow_tui.errors import BackendError
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.queue import JobTable

LINES = 100


def expected(n: int = LINES) -> list[str]:
    """What ``numbered_job`` writes: every 10th line carries a byte that is not UTF-8; the last line
    has no newline."""
    return [f"line {i} \ufffd" if i % 10 == 0 else f"line {i}" for i in range(1, n + 1)] + ["last, no newline"]


def numbered_job(jobs, name: str, n: int = LINES, delay: float = 0.25) -> str:
    script = (
        f"#!/bin/sh\nfor i in $(seq 1 {n}); do\n"
        f"  if [ $((i % 10)) -eq 0 ]; then printf 'line %d \\377\\n' $i; else echo \"line $i\"; fi\n"
        f"  sleep {delay}\ndone\nprintf 'last, no newline'\n"
    )
    return jobs.add(
        slurm("sbatch", "--parsable", "-p", "cpu", "-J", name, "-o", f"{JOBS}/%x-%j.out", input=script).strip()
    )


async def test_a_followed_log_rides_out_dropped_sessions_and_an_sshd_restart(slurm_dir, slurm_jobs):
    with PrivateSshd() as sshd:
        backend = SlurmBackend(sshd.cluster(command_timeout=12))
        seen: list[str] = []
        statuses: list[str] = []
        try:
            job_id = numbered_job(slurm_jobs, "yf-resume")

            async def follow():
                async for line in backend.stream_logs(job_id, follow=True):
                    (statuses if line.status else seen).append(line.text)

            task = asyncio.create_task(follow())
            await async_wait_until(lambda: len(seen) >= 15 or task.done(), 90, "first lines")
            sshd.kill_sessions()  # every connection drops, the listener stays
            await async_wait_until(
                lambda: any(s.startswith("reconnected") for s in statuses) or task.done(), 30, "the stream to come back"
            )
            await async_wait_until(lambda: len(seen) >= 45 or task.done(), 60, "more lines")
            sshd.kill_sessions()
            sshd.stop()  # the login node goes away for a few seconds
            await async_wait_until(
                lambda: len([s for s in statuses if s.startswith("reconnecting")]) == 2 or task.done(),
                30,
                "the second drop seen",
            )
            await asyncio.sleep(3)  # the scenario: the login node stays away a few seconds while retried
            sshd.start()
            await asyncio.wait_for(task, 120)
        finally:
            await backend.close()
    assert seen == expected()
    assert [s.split(" ")[0] for s in statuses] == ["reconnecting…", "reconnected:", "reconnecting…", "reconnected:"]
    assert backend.transport.connects >= 3


def private_config(sshd: PrivateSshd, tmp_path: Path) -> Path:
    cluster = sshd.cluster(command_timeout=12)
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": cluster.name, "kind": "slurm", "ssh": cluster.options["ssh"], "command_timeout": 12}
                ]
            }
        )
    )
    return path


def test_cli_keeps_following_across_a_drop_and_drains_a_job_that_ended_meanwhile(slurm_dir, slurm_jobs, tmp_path, home):
    with PrivateSshd() as sshd:
        config = private_config(sshd, tmp_path)
        # 30 s of lines, so a slow start on a loaded machine still drops mid-job
        job_id = numbered_job(slurm_jobs, "yf-resume-cli", n=60, delay=0.5)
        out, err = tmp_path / "out", tmp_path / "err"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "yanflow_tui", "logs", "--follow", "--config", str(config), job_id],
                stdout=stdout,
                stderr=stderr,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
            try:
                from waiting import wait_until

                wait_until(lambda: out.read_bytes().count(b"\n") >= 10 or proc.poll() is not None, 90, "first lines")
                assert proc.poll() is None and live_state(job_id) == "RUNNING", "the drop must come mid-job"
                sshd.kill_sessions()
                wait_until(lambda: b"reconnected" in err.read_bytes() or proc.poll() is not None, 30, "reconnected")
                wait_until(lambda: out.read_bytes().count(b"\n") >= 25 or proc.poll() is not None, 60, "more lines")
                sshd.kill_sessions()
                sshd.stop()
                # The job ends while the login node is away: the follow drains the rest once it is back.
                wait_until(lambda: live_state(job_id) in (None, "COMPLETED"), 60, "the job to end")
                sshd.start()
                rc = proc.wait(90)
            finally:
                if proc.poll() is None:
                    proc.kill()
    assert rc == 0, err.read_text()
    assert out.read_text(encoding="utf-8").split("\n") == expected(60) + [""]  # each line printed with its newline
    notes = [line for line in err.read_text().splitlines()]
    assert [n.split(" ")[1] for n in notes] == ["reconnecting…", "reconnected:", "reconnecting…", "reconnected:"], notes


async def test_the_logs_pane_shows_reconnecting_then_resumes_without_loss(home, slurm_dir, slurm_jobs):
    with PrivateSshd() as sshd:
        cluster = sshd.cluster(command_timeout=12)
        job_id = numbered_job(slurm_jobs, "yf-resume-ui", n=60, delay=0.5)  # 30 s: the drop comes mid-job
        app = make_app(cluster)
        async with app.run_test(size=(160, 45)) as pilot:
            key = f"{cluster.name}/{job_id}"
            await wait_for(pilot, lambda: key in app.screen.query_one(JobTable).row_keys, timeout=60, what="row")
            app.screen.query_one(JobTable).move_cursor_to_key(key)
            await pilot.press("l")
            logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
            await wait_for(pilot, lambda: len(log_lines(logs)) >= 10, timeout=90, what="first lines")
            sshd.kill_sessions()
            sshd.stop()
            await wait_for(pilot, lambda: "reconnecting…" in screen_text(app), timeout=30, what="reconnecting shown")
            assert not logs.pane.error
            sshd.start()
            await wait_for(pilot, lambda: logs.pane.ended, timeout=120, what="the log to end")
            await wait_for(pilot, lambda: log_lines(logs) == expected(60), what="every line, once, in order")
            assert not logs.pane.error and "reconnecting" not in screen_text(app)


# -- the byte-offset reader against local files ------------------------------------------------------------------


class FlakyTransport(LocalTransport):
    """Local commands whose streams ``cut()`` breaks as a dropped connection would."""

    def __init__(self):
        super().__init__(timeout=12)
        self.cuts: list[asyncio.Event] = []

    async def _stream(self, script: str, binary: bool = False) -> LineStream:
        inner = await super()._stream(script, binary)
        cut = asyncio.Event()
        self.cuts.append(cut)

        async def chunks():
            while True:
                read = asyncio.ensure_future(inner.__anext__())
                waiter = asyncio.ensure_future(cut.wait())
                await asyncio.wait({read, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if not read.done():
                    read.cancel()
                    raise BackendError("ssh test: connection lost (cut)")
                try:
                    yield read.result()
                except StopAsyncIteration:
                    return

        return LineStream(chunks(), inner.aclose)

    def cut(self) -> None:
        self.cuts[-1].set()


async def take(it, n: int) -> list:
    return [await asyncio.wait_for(it.__anext__(), 20) for _ in range(n)]


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


async def test_reader_resumes_at_its_byte_offset_and_rereads_a_truncated_file(tmp_path):
    log = tmp_path / "job.out"
    log.write_bytes(b"one\n\xfftwo\nthr")
    transport = FlakyTransport()
    reader = FileFollower(transport, str(log), lines=100, follow=True)
    it = reader.run()
    try:
        assert await take(it, 2) == ["one", "\ufffdtwo"]
        transport.cut()
        assert await take(it, 1) == [Status("reconnecting… (ssh test: connection lost (cut))")]
        status = await take(it, 1)
        assert status == [Status("reconnected: resuming at byte 9")]  # 4 + 5 bytes, the \xff counted as one
        await asyncio.to_thread(append, log, b"ee\nfour\n")
        assert await take(it, 2) == ["three", "four"]
        transport.cut()
        await take(it, 1)
        log.write_bytes(b"new\n")  # truncated (or rotated) while we were away
        items = await take(it, 3)
        assert items[0].text.startswith("the log is shorter than the 20 bytes shown")
        assert items[1:] == [Status("reconnected: resuming at byte 0"), "new"]
        reader.finish()
        assert [x async for x in it] == []
    finally:
        await reader.close()
    assert reader.offset == 4


async def test_reader_starts_at_the_last_lines_and_drops_a_cut_first_line(tmp_path):
    log = tmp_path / "job.out"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 1001)) + b"end")
    every = [x async for x in FileFollower(LocalTransport(), str(log), lines=3, follow=False).run()]
    assert every == ["line 999", "line 1000", "end"]
    small = [x async for x in FileFollower(LocalTransport(), str(log), lines=50, follow=False, window=20).run()]
    assert small == ["line 1000", "end"]  # the 20-byte window began inside "line 998"
    exact = [x async for x in FileFollower(LocalTransport(), str(log), lines=50, follow=False, window=22).run()]
    assert exact == ["line 999", "line 1000", "end"]  # ... or exactly at a line's start


async def test_reader_without_follow_gives_up_after_repeated_breaks(tmp_path):
    log = tmp_path / "job.out"
    log.write_bytes(b"a\n")

    class Broken(LocalTransport):
        async def _stream(self, script, binary=False):
            raise BackendError("ssh test: cannot connect")

    with pytest.raises(BackendError, match="cannot connect"):
        [x async for x in FileFollower(Broken(), str(log), lines=10, follow=False).run()]
