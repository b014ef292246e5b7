"""The fast path of ``curves.CurveReader``: TensorBoard's own Rust data server (the
``tensorboard_data_server`` package that ``tensorboard --load_fast`` runs) tailing the reader's
mirror directory, asked over gRPC on loopback with TensorBoard's data-provider protos.

``DataServer`` starts the binary (``--reload 1``, every scalar kept: ``--samples-per-plugin
scalars=all``; ``--die-after-stdin`` so it dies with this process), and ``sync`` waits until the
server has read everything written to the mirror before the call. The server commits a run only
after a load cycle read all of its files, in name order, so ``sync`` writes a new one-record
*sentinel* event file (step = a generation number) into each run directory, named to sort before a
writer's files; once ``ListScalars`` shows a run's sentinel at that step, the cycle that found the
sentinel file also found and read, after it, every byte written before it. No fixed sleep: it polls
with a deadline. The sentinel tag is left out of what ``read`` returns.

Differences from ``EventFileLoader`` (documented in the reader): the server keeps TensorBoard's
view, so a step not above the last one of a tag drops that tag's points at and after it (a restarted
job), values are float32, and events with a non-finite wall time are dropped.
"""

from __future__ import annotations

import os
import subprocess
import time
import weakref
from collections.abc import Mapping

SYNC_TAG = ".yanflow-sync"
SYNC_PREFIX = "events.out.tfevents.!yanflow-sync-"  # '!' sorts before a writer's digits: read first
START_TIMEOUT = 15.0
SYNC_TIMEOUT = 300.0  # a cycle over a large mirror takes its time
CALL_TIMEOUT = 60.0
POLL_S = 0.01
POLL_MAX_S = 0.1
ALL_POINTS = 2**31 - 1  # Downsample.num_points (int32): more than any series holds


class DataServerError(Exception):
    """The data server is missing, did not start, died, or did not catch up in time."""


def server_binary() -> str | None:
    """The data server's executable, or None where the package or a binary for this platform is missing."""
    try:
        import tensorboard_data_server

        path = tensorboard_data_server.server_binary()
    except Exception:
        return None
    return path if path and os.access(path, os.X_OK) else None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            if proc.stdin:
                proc.stdin.close()  # --die-after-stdin: it exits on its own
            proc.wait(2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(5)


def _run_name(run: str) -> str:
    return run or "."  # the server names the log directory's own run "."


class DataServer:
    """One data server over ``logdir``; ``work`` holds its port and log files (outside ``logdir``)."""

    def __init__(self, logdir: str, work: str, binary: str | None = None) -> None:
        self.logdir = logdir
        self.work = work
        self.binary = binary or server_binary()
        self.generation = 0
        self.proc: subprocess.Popen | None = None
        self._stub = None
        self._channel = None
        self._sentinels: dict[str, str] = {}  # run directory -> its current sentinel file

    # -- process ---------------------------------------------------------------------------------
    def start(self) -> None:
        if self.binary is None:
            raise DataServerError("TensorBoard's data server (tensorboard_data_server) is not installed")
        import grpc
        from tensorboard.data.proto import data_provider_pb2_grpc

        port_file = os.path.join(self.work, "port")
        log = os.path.join(self.work, "server.log")
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                [self.binary, "--logdir", self.logdir, "--host", "127.0.0.1", "--port", "0"]
                + ["--port-file", port_file, "--error-file", log, "--die-after-stdin"]
                + ["--reload", "1", "--samples-per-plugin", "scalars=all"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        weakref.finalize(self, _stop, self.proc)
        deadline = time.monotonic() + START_TIMEOUT
        port = ""
        while not port.endswith("\n"):
            if self.proc.poll() is not None:
                raise DataServerError(f"the data server exited ({self.proc.returncode}): {self._log_tail()}")
            if time.monotonic() > deadline:
                raise DataServerError("the data server did not say its port in time")
            time.sleep(POLL_S)
            try:
                port = open(port_file).read()
            except FileNotFoundError:
                port = ""
        self._channel = grpc.insecure_channel(
            f"127.0.0.1:{int(port)}", options=[("grpc.max_receive_message_length", -1)]
        )
        self._stub = data_provider_pb2_grpc.TensorBoardDataProviderStub(self._channel)

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self.work, "server.log"), "rb") as f:
                return f.read()[-500:].decode(errors="replace").strip()
        except OSError:
            return ""

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    # -- sync and read ---------------------------------------------------------------------------
    def _write_sentinel(self, directory: str, generation: int) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        value = summary_pb2.Summary.Value(tag=SYNC_TAG, simple_value=float(generation))
        event = event_pb2.Event(step=generation, wall_time=time.time(), summary=summary_pb2.Summary(value=[value]))
        path = os.path.join(directory, f"{SYNC_PREFIX}{generation:012d}")
        temp = os.path.join(self.work, "sentinel.tmp")  # outside the log directory, renamed whole
        with open(temp, "wb") as out:
            RecordWriter(out).write(event.SerializeToString())
        os.replace(temp, path)
        old = self._sentinels.get(directory)
        self._sentinels[directory] = path
        if old:
            try:
                os.unlink(old)
            except OSError:
                pass

    def sync(self, runs: Mapping[str, str]) -> None:
        """Wait until the server has read every byte written so far to the files of ``runs``
        (run name, "" for the log directory's own -> its directory under ``logdir``)."""
        from tensorboard.data.proto import data_provider_pb2 as pb

        self.generation += 1
        generation = self.generation
        for directory in runs.values():
            self._write_sentinel(directory, generation)
        if self.proc is None:
            self.start()  # after the sentinels: its first load cycle finds them
        want = {_run_name(run) for run in runs}
        request = pb.ListScalarsRequest(
            plugin_filter=pb.PluginFilter(plugin_name="scalars"),
            run_tag_filter=pb.RunTagFilter(runs=pb.RunFilter(names=sorted(want)), tags=pb.TagFilter(names=[SYNC_TAG])),
        )
        deadline = time.monotonic() + SYNC_TIMEOUT
        poll = POLL_S
        while True:
            assert self.proc is not None and self._stub is not None
            if self.proc.poll() is not None:
                raise DataServerError(f"the data server exited ({self.proc.returncode}): {self._log_tail()}")
            try:
                found = self._stub.ListScalars(request, timeout=CALL_TIMEOUT)
            except Exception as exc:
                raise DataServerError(f"the data server did not answer: {exc}") from None
            done = {
                entry.run_name
                for entry in found.runs
                for tag in entry.tags
                if tag.tag_name == SYNC_TAG and tag.metadata.max_step >= generation
            }
            if want <= done:
                return
            if time.monotonic() > deadline:
                raise DataServerError(f"the data server did not read the event files within {SYNC_TIMEOUT:.0f} s")
            time.sleep(poll)
            poll = min(poll * 1.5, POLL_MAX_S)  # each answer costs both sides: back off while it loads

    def read(self, runs: list[str]) -> dict[str, dict[str, tuple[list[int], list[float], list[float]]]]:
        """run -> tag -> (steps, wall times, values) of every scalar the server holds for ``runs``."""
        if self._stub is None:
            raise DataServerError("the data server is not running")
        from tensorboard.data.proto import data_provider_pb2 as pb

        names = {_run_name(run): run for run in runs}
        request = pb.ReadScalarsRequest(
            plugin_filter=pb.PluginFilter(plugin_name="scalars"),
            run_tag_filter=pb.RunTagFilter(runs=pb.RunFilter(names=sorted(names))),
            downsample=pb.Downsample(num_points=ALL_POINTS),
        )
        try:
            found = self._stub.ReadScalars(request, timeout=CALL_TIMEOUT)
        except Exception as exc:
            raise DataServerError(f"the data server did not answer: {exc}") from None
        out: dict[str, dict[str, tuple[list[int], list[float], list[float]]]] = {run: {} for run in runs}
        for entry in found.runs:
            run = names.get(entry.run_name)
            if run is None:
                continue
            for tag in entry.tags:
                if tag.tag_name == SYNC_TAG:
                    continue
                data = tag.data
                out[run][tag.tag_name] = (list(data.step), list(data.wall_time), list(data.value))
        return out
