"""What every headless command shares: ``CliContext`` (the command's config and arguments, the hub it
opens, where it prints, its tables, the cluster of a job id), the exit statuses and the one-line error."""

from __future__ import annotations

import getpass
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from yanflow_tui import applog
from yanflow_tui.errors import YanflowError
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    import argparse
    import asyncio

    from yanflow_tui.backends.base import Backend
    from yanflow_tui.config import Config
    from yanflow_tui.hub import Hub

# Only the standard library and the light core at the top: a plain console start imports this module
# (for ``error``) before its first paint; the hub, asyncio and the backends are imported where used.

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PIPE = 141  # the output's reader went away (128 + SIGPIPE)
EXIT_UNKNOWN = 3  # submit: sent, but whether the job exists could not be learned
EXIT_PARTIAL = 4  # jobs, nodes: some clusters answered, the others could not (their errors in the JSON)
CLUSTER_HELP = "the job's cluster (needed when its id is on several clusters)"
log = logging.getLogger(__name__)


class UsageError(YanflowError):
    """An option the command cannot read (a state, a column, a date): exit status 2."""


def error(message: str) -> None:
    """``message`` on stderr, each of its lines as ``yanflow-tui: error: LINE``."""
    for line in message.splitlines() or [""]:
        print(f"yanflow-tui: error: {line}", file=sys.stderr)


class CliContext:
    """One headless command's run: its ``config`` and ``args``, the hub it opens (``hub``), where it
    prints (``out``, ``err``: the streams of the moment, which ``main`` cleans) and how."""

    def __init__(self, config: Config, args: argparse.Namespace) -> None:
        self.config = config
        self.args = args

    @property
    def out(self) -> TextIO:
        return sys.stdout

    @property
    def err(self) -> TextIO:
        return sys.stderr

    def error(self, message: str) -> None:
        error(message)

    def note(self, text: str, flush: bool = False) -> None:
        """A line for the user on stderr (stdout holds the command's output), as ``yanflow-tui: TEXT``."""
        print(f"yanflow-tui: {text}", file=self.err, flush=flush)

    def print_table(self, header: tuple[str, ...], rows: Sequence[Sequence[object]]) -> None:
        """Rows under ``header`` on stdout, in columns as wide as their widest cell."""
        cells = [tuple(clean(str(c)) for c in row) for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
        for row in (header, *cells):
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(), file=self.out)

    @asynccontextmanager
    async def hub(self) -> AsyncIterator[Hub]:
        """The command's clusters (``--cluster``: that one only), closed when the block ends."""
        hub = await open_hub(self.config, getattr(self.args, "cluster", None))
        try:
            yield hub
        finally:
            await hub.close()

    async def job_cluster(self, hub: Hub) -> str:
        """The cluster of the command's job (``args.job``; see ``job_cluster``)."""
        return await job_cluster(hub, self.args.cluster, self.args.job)

    async def job_backend(self, hub: Hub, flag: str, what: str) -> Backend:
        """The backend of the command's job, refused unless it has capability ``flag`` (it cannot ``what``)."""
        name = await self.job_cluster(hub)
        backend = hub.backend(name)
        if not getattr(backend.capabilities, flag):
            why = backend.capabilities.why_off(flag)
            raise YanflowError(f"cluster {name!r} cannot {what}" + (f": it is {why}" if why else ""))
        return backend


async def open_hub(config: Config, cluster: str | None = None) -> Hub:
    """The clusters of a command. One that logs in in the terminal (an OpenSSH master) and is not
    logged in logs in first, as the console does: with ssh's own prompts in a terminal; with no
    terminal, only where nothing needs asking (BatchMode). What it starts stays for the console."""
    import asyncio

    from yanflow_tui import termlogin
    from yanflow_tui.hub import Hub

    if cluster:
        config.cluster(cluster)  # fails with the list of configured names
    hub = Hub(config)
    terminal = sys.stdin.isatty()
    if terminal:  # a login's questions (a one-time code, a passphrase) are asked in the terminal
        asking = asyncio.Lock()
        for name, backend in hub.backends.items():
            backend.prompter = partial(_ask_in_terminal, asking, name)

    def log_in() -> None:
        for name, why in termlogin.log_in_needed(hub, [cluster] if cluster else hub.names, terminal):
            if why:
                error(f"cluster {name!r}: {why}")

    await asyncio.to_thread(log_in)  # ssh -G, -O check and the login itself: off the event loop
    return hub


async def _ask_in_terminal(asking: asyncio.Lock, cluster: str, question: str, secret: bool) -> str | None:
    """A backend's question, asked on the terminal (one at a time; the other clusters keep going).
    Read in a thread of its own, so the event loop runs meanwhile; None on end of input (ctrl+d)."""
    import asyncio

    async with asking:
        text = f"{clean(cluster)}: {clean(question)} "
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | None] = loop.create_future()

        def read() -> None:
            try:
                if secret:
                    line: str | None = getpass.getpass(text)  # on the terminal itself, not echoed
                else:  # the prompt on stderr: stdout holds the command's output (--json)
                    sys.stderr.write(text)
                    sys.stderr.flush()
                    raw = sys.stdin.readline()
                    line = raw.rstrip("\n") if raw else None
            except (EOFError, OSError):
                line = None
            loop.call_soon_threadsafe(_answer, answer, line)

        # a daemon thread: an interrupted run does not wait for a line nobody will type
        threading.Thread(target=read, name="terminal prompt", daemon=True).start()
        line = await answer
    if line and secret:
        applog.add_secret(line)
    return line or None


def _answer(future: asyncio.Future[str | None], line: str | None) -> None:
    if not future.done():
        future.set_result(line)


async def job_cluster(hub: Hub, name: str | None, job_id: str) -> str:
    """The cluster of ``job_id``: ``--cluster``, the only one configured, else the one cluster that
    holds the job. Clusters whose id grammar the id does not fit are skipped with no I/O
    (``Backend.check_id``); the rest are asked at once. Unique only when every one of them answered:
    an id on several clusters, or one that could not be checked everywhere, needs ``--cluster``."""
    import asyncio

    from yanflow_tui.hub import Health

    if name:
        hub.config.cluster(name)
        return name
    if len(hub.names) == 1:
        return hub.names[0]
    fits = []
    for cluster in hub.names:
        try:
            hub.backend(cluster).check_id(job_id)
        except YanflowError:
            continue
        fits.append(cluster)
    if not fits:
        raise YanflowError(f"no configured cluster has job ids like {job_id!r} ({', '.join(hub.names)})")
    if len(fits) == 1:
        return fits[0]

    async def holds(cluster: str) -> bool | str:
        """True / False: the cluster has the job or not; text: why it could not be asked."""
        snapshot = await hub.refresh(cluster, jobs=True, nodes=False)
        if snapshot.health is not Health.OK:
            return snapshot.message or snapshot.health.value
        if any(job.id == job_id for job in snapshot.jobs):
            return True
        try:  # finished jobs that the list no longer shows (Slurm's accounting, a local history)
            await hub.call(hub.backend(cluster).get_job(job_id))
        except Exception:
            return False
        return True

    answers = dict(zip(fits, await asyncio.gather(*(holds(c) for c in fits))))
    found = [c for c, answer in answers.items() if answer is True]
    unknown = {c: answer for c, answer in answers.items() if isinstance(answer, str)}
    if len(found) > 1:
        raise YanflowError(f"job {job_id!r} is on several clusters ({', '.join(found)}); pass --cluster NAME")
    if unknown:
        held = f"job {job_id!r} is on {found[0]!r}, but" if found else f"job {job_id!r} was not found, and"
        why = "; ".join(f"{c}: {text}" for c, text in unknown.items())
        raise YanflowError(f"{held} these clusters could not be checked ({why}); pass --cluster NAME")
    if not found:
        raise YanflowError(f"no job {job_id!r} on any configured cluster ({', '.join(fits)})")
    return found[0]


Command = Callable[[CliContext], Coroutine[Any, Any, int]]  # a headless command (``async def``): its exit status
