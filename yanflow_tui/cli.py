"""Command line: ``yanflow-tui`` starts the console; ``jobs``, ``nodes``, ``submit``, ``cancel``, ``logs``,
``metrics``, the scheduler verbs (``resubmit``, ``hold``, ``release``, ``requeue``, ``edit``, ``signal``),
(inside a running job, see ``inside``) ``files``, ``download``, ``shell``, ``forward`` and ``tensorboard``
(see ``tensorboards``) run headless over the same backends; ``completion SHELL`` prints a completion script. Errors go
to stderr as one line, exit code non-zero, never a traceback (``YANFLOW_DEBUG=1`` shows one)."""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import shlex
import sys
import threading
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from yanflow_tui import __version__, applog, keyfiles
from yanflow_tui.errors import SubmitUnknown, UIConfigError, YanflowError
from yanflow_tui.locations import app_log_path, display_path
from yanflow_tui.sanitize import clean, clean_streams

if TYPE_CHECKING:
    import asyncio

# A plain console start imports only what paints the cached Queue (``earlypaint``): the commands'
# modules (and asyncio, the backends, Textual) are imported where they are used.

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PIPE = 141  # the output's reader went away (128 + SIGPIPE)
EXIT_UNKNOWN = 3  # submit: sent, but whether the job exists could not be learned
SUBMIT_EXITS = (
    "exit status: 0 submitted (the job id is printed), 1 not submitted, 3 unknown: the outcome could not "
    "be learned; the tag is printed: rerun with --tag TAG, which submits only if no job holds that tag"
)
log = logging.getLogger(__name__)
VERDICT_TIMEOUT = 15.0  # s to read the nodes for submit's capacity verdict


def _common(files: object = None, exit_on_error: bool = True) -> argparse.ArgumentParser:
    """The options every command takes; ``files``: shtab's completion of a file name (the whole parser's)."""
    common = argparse.ArgumentParser(add_help=False, exit_on_error=exit_on_error)
    config = common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file (default: $YANFLOW_CONFIG or $XDG_CONFIG_HOME/yanflow/config.yaml)",
    )
    if files is not None:
        config.complete = files  # type: ignore[attr-defined]
    common.add_argument(
        "--read-only",
        action="store_true",
        default=argparse.SUPPRESS,
        help="refuse every submit, cancel or other change, on every cluster",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write more detail to the log (no secrets, ever)",
    )
    return common


def _console_args(argv: Sequence[str] | None) -> argparse.Namespace | None:
    """The arguments of a plain console start (no command; only the common options), read without building
    every command's parser and importing shtab, which would cost the first paint ~35 ms. None for anything
    else (a command, --help, --version, a mistake): the whole parser reads those and says what is wrong."""
    try:
        args, rest = _common(exit_on_error=False).parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    if rest:
        return None
    args.command = None
    return args


def _parser() -> argparse.ArgumentParser:
    import shtab  # static completion scripts, made from this parser

    from yanflow_tui import inside, tensorboards
    from yanflow_tui.projects import project_names

    common = _common(shtab.FILE)
    parser = argparse.ArgumentParser(
        prog="yanflow-tui",
        parents=[common],
        description="A keyboard-driven console for ML training clusters. Without a command, starts the console.",
        epilog=f"log: {display_path(app_log_path())} (mode 0600, rotated; more detail with --debug)",
    )
    parser.add_argument("--version", action="version", version=f"yanflow-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, text in (("jobs", "list jobs"), ("nodes", "list nodes and their GPUs")):
        p = sub.add_parser(name, parents=[common], help=text, description=text)
        p.add_argument("--cluster", metavar="NAME", help="only this cluster")
        p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser(
        "submit",
        parents=[common],
        help="submit a job file: a spec, an sbatch script, a Determined config or a Kubernetes manifest",
        description="Submit FILE. Its kind is read from its content: a YanFlow job spec, an sbatch script "
        "(sent as written), a Determined experiment or command config, or a Kubernetes manifest (Job, Pod, "
        "PyTorchJob, MPIJob; created as written, never replacing one of the same name).",
        epilog=SUBMIT_EXITS,
    )
    p.add_argument("file", metavar="FILE").complete = shtab.FILE  # type: ignore[attr-defined]
    p.add_argument(
        "--context",
        metavar="DIR",
        help="a Determined experiment's model definition folder, uploaded with it (default: FILE's folder)",
    ).complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    p.add_argument(
        "--tag",
        metavar="TAG",
        help='retry the submit that ended "unknown" with this tag: look it up first, submit only if no job holds it',
    )
    p.add_argument(
        "--cluster",
        metavar="NAME",
        help="target cluster (default: the spec's, else the first scheduler that runs its kind, else this machine)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be sent, in the backend's native form (and the capacity verdict on stderr)",
    )
    p.add_argument("--force", action="store_true", help="submit even when the job can never fit the cluster's nodes")
    p = sub.add_parser("cancel", parents=[common], help="cancel a job")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help="the job's cluster (needed when its id is on several clusters)")
    for name, text in VERB_HELP.items():
        p = sub.add_parser(name, parents=[common], help=text, description=text)
        p.add_argument("job", metavar="JOB")
        p.add_argument(
            "--cluster", metavar="NAME", help="the job's cluster (needed when its id is on several clusters)"
        )
        if name == "resubmit":
            p.add_argument(
                "--more",
                action="store_true",
                help="twice the time limit after a TIMEOUT, twice the memory after an OUT_OF_MEMORY",
            )
            p.add_argument("--time", metavar="LIMIT", help="the new job's time limit, e.g. 02:00:00")
            p.add_argument("--mem", metavar="SIZE", help="the new job's memory, e.g. 8G")
        elif name == "edit":
            p.add_argument("--time", metavar="LIMIT", help="new time limit, e.g. 01:30:00")
            p.add_argument("--partition", metavar="NAME", help="new partition")
            p.add_argument("--qos", metavar="NAME", help="new QOS")
        elif name == "signal":
            p.add_argument("--signal", "-s", metavar="SIG", default="TERM", help=f"one of {', '.join(SIGNALS)}")
    p = sub.add_parser("logs", parents=[common], help="print a job's log")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help="the job's cluster (needed when its id is on several clusters)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing until the job ends")
    p.add_argument(
        "--stream",
        metavar="NAME",
        default="",
        help="another of the job's logs, e.g. stderr for a Slurm job whose StdErr has its own file, "
        "or a Kubernetes pod's other container (a sidecar)",
    )
    p = sub.add_parser("metrics", parents=[common], help="print a job's training curves (TensorBoard scalars)")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help="the job's cluster (needed when its id is on several clusters)")
    p.add_argument("--json", action="store_true", help="every point: {tag: [{step, wall_time, value}, ...]}")
    inside.add_parsers(sub, common)  # files, download, shell, forward
    tensorboards.add_parser(sub, common)
    p = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script for SHELL, e.g. "
        "`yanflow-tui completion bash > ~/.local/share/bash-completion/completions/yanflow-tui`, "
        "`yanflow-tui completion zsh > ~/.zfunc/_yanflow-tui`, "
        "`yanflow-tui completion fish > ~/.config/fish/completions/yanflow-tui.fish`.",
    )
    p.add_argument("shell", choices=COMPLETION_SHELLS)
    p = sub.add_parser(
        "init",
        help="write a template project (code and job spec) into a new folder",
        description="Write template project TEMPLATE (a small runnable training project and its job.yaml) "
        "into DIR, which must be new or empty. Then: yanflow-tui submit DIR/job.yaml",
    )
    p.add_argument("template", metavar="TEMPLATE", choices=project_names(), help=", ".join(project_names()))
    p.add_argument("dir", metavar="DIR").complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    return parser


def _init(template: str, folder: str) -> int:
    """``yanflow-tui init``: needs no config, touches no cluster."""
    from yanflow_tui.projects import ProjectError, write_project

    try:
        spec = write_project(template, folder)
    except (ProjectError, OSError) as exc:
        _error(str(exc))
        return EXIT_ERROR
    print(f"wrote {display_path(spec.parent)}/; submit it with: yanflow-tui submit {display_path(spec)}")
    return 0


COMPLETION_SHELLS = ("bash", "zsh", "fish")
# The job verbs beyond cancel (``Backend.perform``), each a command of its own.
VERB_HELP = {
    "resubmit": "submit a job again: its batch script and options (--more: more time or memory)",
    "hold": "hold a pending job (it stays queued, not started)",
    "release": "release a held job",
    "requeue": "requeue a running or finished job",
    "edit": "change a pending job's time limit, partition or QOS",
    "signal": "send a signal to a job's processes",
}
SIGNALS = ("TERM", "INT", "HUP", "USR1", "USR2", "KILL", "STOP", "CONT")  # as backends.base.SIGNALS


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    import shtab

    sys.stdout.write(shtab.complete(parser, shell=shell))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Everything printed (stdout, stderr, argparse's messages, errors) is cleaned at one point: the
    ``sanitize.CleanStream`` over each (Textual writes to the terminal itself)."""
    with clean_streams():
        try:
            code = _main(argv)
            sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
            return code
        except BrokenPipeError:
            return _pipe_closed()


def _pipe_closed() -> int:
    """The reader of our output went away (``yanflow-tui jobs | head -1``): no message, no traceback,
    exit status 141 (128 + SIGPIPE, as a command killed by it). Both streams are pointed at /dev/null,
    so that what is still buffered is not written to the closed pipe at exit."""
    log.info("output closed by its reader")
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            os.dup2(devnull, stream.fileno())  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):  # replaced streams (tests)
            continue
    os.close(devnull)
    return EXIT_PIPE


def _main(argv: Sequence[str] | None) -> int:
    args = _console_args(argv)
    if args is None:
        parser = _parser()
        args = parser.parse_args(argv)
        if args.command == "completion":  # needs no config, touches nothing
            return _completion(parser, args.shell)
        if args.command == "init":
            return _init(args.template, args.dir)
    log_path = applog.setup(debug=getattr(args, "debug", False))
    log.info("yanflow-tui %s: %s", __version__, args.command or "console")
    keyfiles.install_exit_signals()  # SIGHUP/SIGTERM: key files go first, then a clean exit
    keyfiles.sweep()  # key files left by a killed run
    try:
        config = _config(args)
        if args.command is None:
            return _run_app(config)  # (the app checks theme: and keymap: once the cached Queue is painted)
        if config.theme or config.keymap:  # the console's check, for the headless commands alike
            from yanflow_tui.app import check_ui_config

            check_ui_config(config)
        import asyncio

        return asyncio.run(_commands()[args.command](config, args))
    except UIConfigError as exc:  # a theme: or keymap: the console refuses: a usage error, whatever the command
        log.info("%s: %s", type(exc).__name__, exc)
        _error(str(exc))
        return EXIT_USAGE
    except YanflowError as exc:
        log.info("%s: %s", type(exc).__name__, exc)
        _error(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # ``main``: quietly
    except Exception as exc:
        log.exception("unexpected error")
        if os.environ.get("YANFLOW_DEBUG"):
            raise
        where = f"the traceback is in {display_path(log_path)}" if log_path else "set YANFLOW_DEBUG=1 for details"
        _error(f"unexpected {type(exc).__name__}: {exc} ({where})")
        return EXIT_ERROR


def _error(message: str) -> None:
    for line in message.splitlines() or [""]:
        print(f"yanflow-tui: error: {line}", file=sys.stderr)


def _config(args):
    from yanflow_tui.config import load_config

    # The console keeps the other clusters when one entry is wrong (that one shows its file:line
    # problems on the Clusters screen); a command run from a script stops at any problem.
    config = load_config(getattr(args, "config", None), lenient=args.command is None)
    if args.command is not None:  # the console shows them as notifications
        from yanflow_tui.backends import registry

        for note in registry.notes():
            print(f"yanflow-tui: note: {clean(note)}", file=sys.stderr)
    return config.with_read_only() if getattr(args, "read_only", False) else config


def _run_app(config) -> int:
    """The console. Before the backends and Textual are imported (most of a second of CPU), the cached
    Queue is painted from the digest the last run kept (``earlypaint``); Textual then takes over that
    screen. A cluster that logs in in the terminal does it first (the paint gives the screen back)."""
    from yanflow_tui import earlypaint, snapcache, speed

    path = snapcache.default_path()
    digested, paint_note = snapcache.read_paint(path)  # never raises: a bad file is set aside, with a note
    if paint_note:
        log.warning("%s (%s)", paint_note, path.with_name(snapcache.PAINT_FILE))
    early = earlypaint.paint(config, digested)
    try:
        from yanflow_tui.hub import Hub
        from yanflow_tui.termlogin import log_in_first

        hub = Hub(config)
        # a cluster that logs in in the terminal does it now, before the console (on the normal screen)
        log_in_first(hub, out=early.stream(sys.stderr) if early is not None else None)
        note = "; ".join(filter(None, (paint_note, snapcache.restore(hub, path))))
        speed.freeze_restored()  # the cached jobs live on: the collections while Textual loads need not walk them

        from yanflow_tui.app import YanflowApp, takeover_driver

        driver = takeover_driver(early) if early is not None else None
        app = YanflowApp(config, hub=hub, snapshot_file=path, cache_note=note, driver_class=driver)
        app.run(mouse=config.mouse)
    finally:
        if early is not None:
            early.leave()  # nothing once Textual took over (it leaves the screen itself)
    return app.return_code or 0


async def _hub(config, cluster: str | None = None):
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
                _error(f"cluster {name!r}: {why}")

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


async def _job_cluster(hub, name: str | None, job_id: str) -> str:
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


async def _list(config, args, what: str) -> int:
    import asyncio

    hub = await _hub(config, args.cluster)
    names = [args.cluster] if args.cluster else hub.names
    try:
        snaps = await asyncio.gather(*(hub.refresh(n, jobs=what == "jobs", nodes=what == "nodes") for n in names))
        return await _print_list(hub, args, what, snaps)
    finally:
        await hub.close()


async def _print_list(hub, args, what: str, snaps) -> int:
    from yanflow_tui.hub import Health

    failed = [s for s in snaps if s.health is not Health.OK]
    for snap in failed:
        _error(f"cluster {snap.name!r}: {snap.message}")
    rows = [item for s in snaps if s.health is Health.OK for item in (s.jobs if what == "jobs" else s.nodes)]
    if what == "jobs":
        data = [job_json(j) for j in rows]
        if args.json:
            figures = await _efficiencies(hub, rows)
            for item in data:
                eff = figures.get((item["cluster"], item["id"]))
                item["efficiency"] = eff.as_json() if eff is not None else None
        table = [
            (j.cluster, j.id, j.name, j.user, j.state.value, str(j.gpus), ",".join(j.nodes) or "-", j.reason)
            for j in rows
        ]
        header = ("CLUSTER", "ID", "NAME", "USER", "STATE", "GPUS", "NODES", "REASON")
    else:
        data = [node_json(n) for n in rows]
        table = [
            (
                n.cluster,
                n.name,
                n.state,
                f"{n.gpus_allocated}/{n.gpus_total}",
                n.gpu_type or "-",
                f"{n.cpus_allocated}/{n.cpus_total}",
                f"{n.memory_mb // 1024}G",
                n.reason,
            )
            for n in rows
        ]
        header = ("CLUSTER", "NODE", "STATE", "GPUS", "GPU TYPE", "CPUS", "MEMORY", "NOTE")
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        _print_table(header, table)
    return EXIT_ERROR if failed else 0


async def _efficiencies(hub, jobs) -> dict:
    """(cluster, job id) -> seff's figures, for started jobs on clusters that have them; a cluster
    that cannot say (no accounting, a timeout) leaves its jobs at null."""
    import asyncio  # loaded by now (this runs on the loop); imported here to keep the plain start light

    out: dict = {}
    by_cluster: dict[str, list[str]] = {}
    for job in jobs:
        if job.start_time is not None or job.state.terminal:
            by_cluster.setdefault(job.cluster, []).append(job.id)
    for name, ids in by_cluster.items():
        backend = hub.backend(name)
        if not backend.capabilities.efficiency:
            continue
        try:
            found = await hub.call(backend.efficiency(ids))
        except (YanflowError, TimeoutError, asyncio.TimeoutError) as exc:
            log.info("efficiency on %s: %s", name, exc)
            continue
        out.update({(name, job_id): eff for job_id, eff in found.items()})
    return out


def _print_table(header: tuple[str, ...], rows: Sequence[Sequence[object]]) -> None:
    cells = [tuple(clean(str(c)) for c in row) for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    for row in (header, *cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def job_json(job) -> dict:
    return {
        "id": job.id,
        "cluster": job.cluster,
        "name": job.name,
        "user": job.user,
        "state": job.state.value,
        "raw_state": job.raw_state,
        "reason": job.reason,
        "kind": job.kind.value,
        "nodes": list(job.nodes),
        "gpus": job.gpus,
        "gpu_indices": list(job.gpu_indices),
        "exit_code": job.exit_code,
        "submit_time": _iso(job.submit_time),
        "start_time": _iso(job.start_time),
        "end_time": _iso(job.end_time),
    }


def node_json(node) -> dict:
    return {
        "name": node.name,
        "cluster": node.cluster,
        "state": node.state,
        "partitions": list(node.partitions),
        "gpus_total": node.gpus_total,
        "gpus_used": node.gpus_allocated,
        "gpu_type": node.gpu_type,
        "cpus_total": node.cpus_total,
        "cpus_used": node.cpus_allocated,
        "memory_mb": node.memory_mb,
        "reason": node.reason,
        "gpus": [
            {
                "index": g.index,
                "state": g.state.value,
                "job": g.job_id,
                "utilization": g.utilization,
                "memory_used_mb": g.memory_used_mb,
                "memory_total_mb": g.memory_total_mb,
                "reason": g.reason,
            }
            for g in node.gpus
        ],
    }


async def _jobs(config, args) -> int:
    return await _list(config, args, "jobs")


async def _nodes(config, args) -> int:
    return await _list(config, args, "nodes")


async def _submit(config, args) -> int:
    from yanflow_tui.capacity import Fit
    from yanflow_tui.nativefiles import load_job_file

    spec = load_job_file(args.file, args.context)
    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        name = hub.cluster_for_submit(
            args.cluster, spec.cluster, spec.kind, spec.native and spec.native.kind, spec.sections
        )
        backend = hub.backend(name)
        if args.dry_run:
            text = backend.render(spec)
            found = await _verdict(hub, name, spec)
            if found is not None:
                print(f"yanflow-tui: {found}", file=sys.stderr)
            sys.stdout.write(text)
            return 0
        if not backend.read_only:  # a closed gate refuses below with its own message
            backend.check_spec(spec)
            found = await _verdict(hub, name, spec)
            if found is not None and found.fit is Fit.NEVER and not args.force:
                raise YanflowError(f"{found} (--force submits anyway)")
            if found is not None and found.fit is Fit.WAITS:
                print(f"yanflow-tui: {found}", file=sys.stderr)
        job_id = await hub.submit(name, spec, args.tag)
    except SubmitUnknown as exc:
        _error(str(exc))
        _error(
            f"retry without a duplicate: yanflow-tui submit {shlex.quote(args.file)} --cluster {shlex.quote(name)} "
            + (f"--context {shlex.quote(args.context)} " if args.context else "")
            + f"--tag {exc.tag}"
        )
        return EXIT_UNKNOWN
    finally:
        await hub.close()
    print(job_id)
    return 0


async def _verdict(hub, name: str, spec):
    """The capacity verdict on ``spec`` from the cluster's nodes now; None (said on stderr) when the
    nodes cannot be read."""
    from yanflow_tui.capacity import verdict
    from yanflow_tui.hub import Health

    timeout, hub.timeout = hub.timeout, min(hub.timeout, VERDICT_TIMEOUT)  # an unreachable cluster must not stall
    try:
        snapshot = await hub.refresh(name, jobs=False, nodes=True)
    finally:
        hub.timeout = timeout
    if snapshot.health is not Health.OK or not snapshot.nodes:
        print(f"yanflow-tui: capacity not checked: {snapshot.message or 'no nodes listed'}", file=sys.stderr)
        return None
    return verdict(snapshot.nodes, hub.backend(name).capacity_request(spec))


async def _cancel(config, args) -> int:
    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        name = await _job_cluster(hub, args.cluster, args.job)
        await hub.call(hub.backend(name).cancel(args.job))
    finally:
        await hub.close()
    print(f"cancelled job {args.job} on {name}", file=sys.stderr)
    return 0


def _refuse_if_read_only(hub, name: str | None, job_id: str, verb: str) -> None:
    """Refuse before any I/O (not even the reads that find the job's cluster) when every cluster
    the job could be on is read-only."""
    names = [name] if name else hub.names
    fits = []
    for cluster in names:
        try:
            hub.backend(cluster).check_id(job_id)
        except YanflowError:
            continue
        fits.append(cluster)
    if fits and all(hub.backend(c).read_only for c in fits):
        hub.backend(fits[0]).gate.check(verb)


def verb_args(args) -> dict[str, str]:
    """The ``perform`` arguments a verb's command line gave (``VERB_ARGS``)."""
    out = {}
    for key in ("time", "mem", "partition", "qos", "signal"):
        value = getattr(args, key, None)
        if value:
            out[key] = value
    if getattr(args, "more", False):
        out["more"] = "yes"
    return out


async def _verb(config, args) -> int:
    """resubmit, hold, release, requeue, edit, signal: one ``perform`` through the gate."""
    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        _refuse_if_read_only(hub, args.cluster, args.job, args.command)
        name = await _job_cluster(hub, args.cluster, args.job)
        said = await hub.call(hub.backend(name).perform(args.job, args.command, verb_args(args)))
    finally:
        await hub.close()
    print(said or f"{args.command}: job {args.job} on {name}", file=sys.stderr)
    return 0


async def _logs(config, args) -> int:
    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        name = await _job_cluster(hub, args.cluster, args.job)
        backend = hub.backend(name)
        if not backend.capabilities.logs:
            raise YanflowError(f"cluster {name!r} cannot show logs")
        await hub.call(backend.get_job(args.job))  # a clear error for an unknown job
        out = sys.stdout
        last_flush = time.monotonic()
        if args.stream and args.stream not in (streams := await hub.call(backend.log_streams(args.job))):
            raise YanflowError(
                f"job {args.job} has no separate {args.stream!r} log; its logs: "
                + ", ".join(s or "main" for s in streams)
            )
        async for line in backend.stream_logs(args.job, follow=args.follow, stream=args.stream):
            if line.status:  # the stream's own state (reconnecting...): stderr, so stdout stays the log
                out.flush()
                print(f"yanflow-tui: {line.text}", file=sys.stderr, flush=True)
                continue
            prefix = f"[{clean(line.source)}] " if line.source else ""  # the rank of a multi-node job
            out.write(prefix + clean(line.text) + "\n")
            if args.follow and time.monotonic() - last_flush > 0.1:
                out.flush()
                last_flush = time.monotonic()
        out.flush()
    finally:
        await hub.close()
    return 0


async def _metrics(config, args) -> int:
    from yanflow_tui import curves

    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        name = await _job_cluster(hub, args.cluster, args.job)
        found = await curves.job_curves(hub.backend(name), args.job, hub.timeout)
    finally:
        await hub.close()
    if args.json:
        json.dump(found.to_json(), sys.stdout)
        print()
    else:
        for line in curves.summary_lines(found):
            print(line)
    return 0


def _commands() -> dict[str, Any]:
    """Each command's coroutine function by name (its modules imported on first use)."""
    global _COMMANDS
    if _COMMANDS is None:
        from yanflow_tui import inside, tensorboards

        _COMMANDS = {
            "jobs": _jobs,
            "nodes": _nodes,
            "submit": _submit,
            "cancel": _cancel,
            "logs": _logs,
            "metrics": _metrics,
            **dict.fromkeys(VERB_HELP, _verb),
            **inside.COMMANDS,
            "tensorboard": tensorboards.command,
        }
    return _COMMANDS


_COMMANDS: dict[str, Any] | None = None
