"""The Slurm backend and the headless CLI against the REAL loopback cluster, through the REAL sshd
(``scripts/slurm-cluster up``; these tests fail, not skip, without it). Slurm's own commands, run
directly, are the ground truth."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from slurmhelpers import (
    CONF,
    DIR,
    JOBS,
    ROOT,
    SAMPLES,
    live_state,
    local_cluster,
    sinfo_gpus,
    slurm,
    squeue_job,
    ssh_cluster,
)
from waiting import async_wait_until, wait_until

from yanflow_tui import cli, submitted
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import MAX_CHANNELS, CommandTimeout, LocalTransport, Result
from yanflow_tui.config import Config
from yanflow_tui.errors import BackendError, ReadOnlyError
from yanflow_tui.hub import Health, Hub
from yanflow_tui.spec import parse_spec

CONFIG = str(DIR / "yanflow.yaml")


def spec(text: str):
    return parse_spec(text, "test.yaml")


def sleeper(name: str, seconds: int = 120, partition: str = "cpu", **slurm_keys) -> str:
    extra = "".join(f", {k}: {json.dumps(v)}" for k, v in slurm_keys.items())
    return (
        f"name: {json.dumps(name)}\nkind: slurm\ncommand: sleep {seconds}\n"
        f"resources: {{cpus: 1, memory: 100M}}\nslurm: {{partition: {partition}, output: /dev/null{extra}}}\n"
    )


@pytest.fixture
async def backend(slurm_dir):
    b = SlurmBackend(ssh_cluster(nodes_refresh_seconds=1))
    yield b
    await b.close()


def argv_names(b: SlurmBackend) -> list[str]:
    return [argv[0] for argv in b.transport.history]


async def test_reads_take_user_from_transport_and_run_one_squeue_and_cached_sinfo(backend, monkeypatch):
    monkeypatch.setenv("USER", "nobody-here")
    assert await backend.transport.user() == pwd.getpwuid(os.getuid()).pw_name
    await backend.list_jobs()
    assert argv_names(backend).count("squeue") == 1  # one squeue per refresh, never one per job
    backend.nodes_refresh = 3600
    first = await backend.list_nodes()
    assert await backend.list_nodes() == first
    assert argv_names(backend).count("sinfo") == 1
    backend.invalidate()  # the manual refresh key
    await backend.list_nodes()
    assert argv_names(backend).count("sinfo") == 2
    assert {n.name for n in first} == set(sinfo_gpus())


async def test_history_needs_accounting_note(backend, slurm_jobs):
    await backend.list_jobs()
    assert backend.history_note.startswith("history needs accounting")
    assert "accounting storage is disabled" in backend.history_note
    assert backend.notice.startswith("history needs accounting")  # the header shows it
    job_id = slurm_jobs.add(await backend.submit(spec(sleeper("yf-note", 30))))
    assert "History:" in await backend.describe(job_id) and "needs accounting" in await backend.describe(job_id)


def test_cli_submits_the_sample_which_gets_its_nodes_and_gres_and_logs_follow(slurm_dir, slurm_jobs, capsys):
    before = sinfo_gpus()
    assert cli.main(["--config", CONFIG, "nodes", "--json"]) == 0
    assert {
        n["name"]: (n["gpus_used"], n["gpus_total"]) for n in json.loads(capsys.readouterr().out)["nodes"]
    } == before
    assert cli.main(["--config", CONFIG, "submit", str(SAMPLES / "slurm-batch.yaml")]) == 0
    job_id = slurm_jobs.add(capsys.readouterr().out.strip())
    assert job_id.isdigit()
    record = wait_until(lambda: (j := squeue_job(job_id)) and j["job_state"] == "RUNNING" and j, 30, "running")
    assert record["name"] == "slurm-batch-demo" and record["node_count"] == 2
    assert record["tres_per_node"] == "gres:gpu:1"  # the sample asks for any GPU type
    assert len(record["gres_detail"]) == 2 and all(
        re.fullmatch(r"gpu:a100:1\(IDX:\d\)", g) for g in record["gres_detail"]
    )
    nodes = record["nodes"]
    assert cli.main(["--config", CONFIG, "jobs", "--json"]) == 0
    row = next(j for j in json.loads(capsys.readouterr().out)["jobs"] if j["id"] == job_id)
    assert row["state"] == "running" and row["gpus"] == 2 and len(row["nodes"]) == 2
    assert cli.main(["--config", CONFIG, "nodes", "--json"]) == 0
    during = {n["name"]: (n["gpus_used"], n["gpus_total"]) for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert during == sinfo_gpus() and sum(u for u, _ in during.values()) >= 2
    assert nodes in ("gpu[01-02]", "gpu[01-04]") or nodes.startswith("gpu")
    follow = subprocess.run(
        [sys.executable, "-m", "yanflow_tui", "--config", CONFIG, "logs", "--follow", job_id],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert follow.returncode == 0, follow.stderr
    lines = follow.stdout.splitlines()
    assert [f"line {i}" for i in range(1, 21)] == [x for x in lines if x.startswith("line ")]
    assert lines[-1] == "done" and lines[0].startswith("start on ")
    assert live_state(job_id) in ("COMPLETED", None)


async def test_hostile_name_is_stored_exactly_and_nothing_runs_on_the_login_node(backend, slurm_jobs, tmp_path):
    m1, m2 = tmp_path / "dollar", tmp_path / "backtick"
    name = f"-x'\"; $(touch {m1}) `touch {m2}` \\ a [b]"
    job_id = slurm_jobs.add(await backend.submit(spec(sleeper(name, 30))))
    assert squeue_job(job_id)["name"] == name
    # A name with a line break cannot come from a spec (it is refused there), but another user's
    # sbatch can set one: it forces the JSON fallback and is still read exactly.
    other = slurm_jobs.add(
        slurm("sbatch", "--parsable", "-p", "cpu", "-o", "/dev/null", "-J", "two\nlines", "--wrap", "sleep 30").strip()
    )
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs[job_id].name == name and jobs[other].name == "two\nlines"
    assert "sbatch" in argv_names(backend)
    # Every command above has returned: a shell that ran the name's $(...) or `...` has made its marker by now.
    assert not m1.exists() and not m2.exists()


async def test_an_array_is_a_group_and_can_be_cancelled_per_task(backend, slurm_jobs):
    job_id = slurm_jobs.add(await backend.submit(spec(sleeper("yf-array", 120, array="0-3"))))
    await async_wait_until(lambda: all(live_state(f"{job_id}_{i}") == "RUNNING" for i in range(4)), 30, "tasks running")
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs[job_id].parent == "" and jobs[job_id].raw_state == "ARRAY"
    assert {j.id for j in jobs.values() if j.parent == job_id} == {f"{job_id}_{i}" for i in range(4)}
    await backend.cancel(f"{job_id}_2")
    await async_wait_until(lambda: live_state(f"{job_id}_2") in ("CANCELLED", None), 20, "task 2 cancelled")
    assert [live_state(f"{job_id}_{i}") for i in (0, 1, 3)] == ["RUNNING"] * 3
    await backend.cancel(job_id)
    await async_wait_until(lambda: all(live_state(f"{job_id}_{i}") in ("CANCELLED", None) for i in range(4)), 20, "all")


def test_cli_cancel_ends_the_job(slurm_jobs, tmp_path, capsys):
    path = tmp_path / "sleeper.yaml"
    path.write_text(sleeper("yf-cli-cancel"))
    assert cli.main(["--config", CONFIG, "submit", str(path)]) == 0
    job_id = slurm_jobs.add(capsys.readouterr().out.strip())
    wait_until(lambda: live_state(job_id) == "RUNNING", 30, "running")
    assert cli.main(["--config", CONFIG, "cancel", job_id]) == 0
    wait_until(lambda: live_state(job_id) in ("CANCELLED", None), 20, "cancelled")
    assert cli.main(["--config", CONFIG, "cancel", "1; touch /tmp/x"]) == 1
    assert "not a Slurm job id" in capsys.readouterr().err


async def test_read_only_never_runs_sbatch_or_scancel(slurm_dir):
    b = SlurmBackend(replace(ssh_cluster(), read_only=True))
    try:
        await b.list_jobs()
        with pytest.raises(ReadOnlyError):
            await b.submit(spec(sleeper("yf-ro")))
        with pytest.raises(ReadOnlyError):
            await b.cancel("1")
        assert not {"sbatch", "scancel"} & set(argv_names(b)) and "squeue" in argv_names(b)
    finally:
        await b.close()


def test_read_only_cli_refuses_submit(slurm_dir, capsys):
    assert cli.main(["--config", CONFIG, "--read-only", "submit", str(SAMPLES / "slurm-batch.yaml")]) == 1
    assert "read-only" in capsys.readouterr().err
    assert not any(
        j["name"] == "slurm-batch-demo" and j["job_state"] == "PENDING"
        for j in json.loads(slurm("squeue", "--json"))["jobs"]
    )


async def test_a_timed_out_submit_is_found_by_its_tag_not_resubmitted(backend, slurm_jobs):
    real_run = backend.transport.run

    async def slow_controller(argv, stdin_data=None, timeout=None):
        result = await real_run(argv, stdin_data, timeout)
        if argv[0] == "sbatch":  # the job was taken, but the answer never came back
            raise CommandTimeout("sbatch did not answer within 30 s")
        return result

    backend.transport.run = slow_controller
    job_id = slurm_jobs.add(await backend.submit(spec(sleeper("yf-timeout", 30))))
    same = [j for j in json.loads(slurm("squeue", "--json"))["jobs"] if j["name"] == "yf-timeout"]
    assert [str(j["job_id"]) for j in same] == [job_id]
    assert same[0]["comment"].startswith("yanflow:")
    assert argv_names(backend).count("sbatch") == 1


def state_polls(b: SlurmBackend) -> list[list[str]]:
    """The one-line ``squeue -j ID -o %T`` state queries the backend ran."""
    return [argv for argv in b.transport.history if "-j" in argv and "%T" in argv]


def tails(path: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "tail -[nc]"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if path in line]


async def test_logs_wait_for_a_pending_job_and_closing_kills_the_remote_tail(backend, slurm_jobs):
    script = '#!/bin/sh\nfor i in $(seq 1 200); do echo "tick $i"; sleep 0.3; done\n'
    job_id = slurm_jobs.add(
        slurm(
            "sbatch", "--parsable", "--hold", "-p", "cpu", "-J", "yf-logs", "-o", f"{JOBS}/%x-%j.out", input=script
        ).strip()
    )
    path = f"{JOBS}/yf-logs-{job_id}.out"
    stream = backend.stream_logs(job_id, follow=True)
    first = asyncio.create_task(stream.__anext__())
    await async_wait_until(lambda: len(state_polls(backend)) >= 2, 30, "the stream polling the pending job's state")
    assert not first.done()  # pending: no file yet, the stream waits
    slurm("scontrol", "release", job_id)
    line = await asyncio.wait_for(first, 30)
    assert line.text.startswith("tick ") and line.job_id == job_id
    assert (await asyncio.wait_for(stream.__anext__(), 10)).text.startswith("tick ")
    assert tails(path), "a tail -F should be running for the job's log"
    following = len(state_polls(backend))
    # The follow polls the job's state meanwhile: one line of squeue, not all jobs' JSON.
    await async_wait_until(lambda: len(state_polls(backend)) >= following + 2, 30, "the follow polling the state")
    assert len([argv for argv in backend.transport.history if "--json" in argv]) <= 3  # the job's details, twice
    await stream.aclose()
    await async_wait_until(lambda: not tails(path), 10, "remote tail gone")
    assert live_state(job_id) == "RUNNING"


async def test_a_log_stream_waiting_for_a_free_channel_gives_up_after_the_timeout(backend):
    await backend.list_jobs()  # connected
    transport = backend.transport
    transport.timeout = 1.0
    for _ in range(MAX_CHANNELS):  # every channel held, e.g. by eight followed logs
        await transport._channels.acquire()
    with pytest.raises(BackendError, match="channels stayed busy"):
        await asyncio.wait_for(transport.tail("/dev/null", 10, True), 10)


async def test_unknown_host_key_is_refused_showing_its_fingerprint(slurm_dir, tmp_path):
    other = tmp_path / "other"
    await asyncio.to_thread(
        subprocess.run, ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True
    )
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:2222 {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    keygen = await asyncio.to_thread(
        subprocess.run,
        ["ssh-keygen", "-lf", str(DIR / "ssh" / "host_ed25519.pub")],
        capture_output=True,
        text=True,
        check=True,
    )
    real = keygen.stdout.split()[1]
    assert real.startswith("SHA256:")
    cluster = ssh_cluster()
    ssh = dict(cluster.options["ssh"], known_hosts=str(known))
    hub = Hub(Config((replace(cluster, options={**cluster.options, "ssh": ssh}),)))
    try:
        snap = await hub.refresh(cluster.name)
        assert snap.health is Health.ERROR and real in snap.message and "not trusted" in snap.message
        with pytest.raises(BackendError, match="refusing"):
            await hub.backend(cluster.name).list_nodes()
    finally:
        await hub.close()
    assert hub.backend(cluster.name).transport.connects == 0


def sshd_children() -> list[int]:
    listener = (DIR / "run" / "sshd.pid").read_text().strip()
    out = subprocess.run(["pgrep", "-P", listener], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


async def test_a_killed_ssh_connection_reconnects(slurm_dir):
    hub = Hub(Config((ssh_cluster(),)))
    name = hub.names[0]
    try:
        assert (await hub.refresh(name)).health is Health.OK
        transport = hub.backend(name).transport
        assert transport.connects == 1 and sshd_children()
        for pid in sshd_children():
            os.kill(pid, 9)
        snaps = []

        async def reconnected() -> bool:
            snaps.append(await hub.refresh(name))
            return snaps[-1].health is Health.OK and transport.connects == 2

        await async_wait_until(reconnected, 30, "a good refresh over a second connection")
        assert snaps[-1].health is Health.OK and transport.connects == 2, [s.message for s in snaps]
        assert all(s.health in (Health.OK, Health.STALE) for s in snaps)
    finally:
        await hub.close()


async def test_stopped_slurmctld_marks_the_cluster_stale_and_data_returns(slurm_dir):
    hub = Hub(Config((ssh_cluster(),)))
    name = hub.names[0]
    try:
        good = await hub.refresh(name)
        assert good.health is Health.OK and good.nodes
        pid = int((DIR / "run" / "slurmctld.pid").read_text())
        os.kill(pid, 15)
        await async_wait_until(lambda: not Path(f"/proc/{pid}").exists(), 20, "slurmctld stopped")
        hub.backend(name).invalidate()
        stale = await hub.refresh(name)
        assert stale.health is Health.STALE and stale.message and stale.nodes == good.nodes
    finally:
        up = await asyncio.to_thread(
            subprocess.run, [str(ROOT / "scripts" / "slurm-cluster"), "up"], capture_output=True, text=True
        )
        assert up.returncode == 0, up.stderr
    try:
        back = await hub.refresh(name)
        assert back.health is Health.OK and back.failures == 0
    finally:
        await hub.close()


async def test_the_transports_hand_the_bytes_printed_and_decode_them_when_read(slurm_dir, backend):
    for transport in (backend.transport, LocalTransport()):  # asyncssh, local commands
        printed = await transport.run(["printf", "\\377ok \\342\\234\\223\\n"])
        assert printed.ok and printed.data == b"\xffok \xe2\x9c\x93\n" and printed.stdout == "\ufffdok \u2713\n"
        assert printed.stdout is printed.stdout  # decoded once
    said = Result(("x",), 0, "text", "")
    assert said.data == b"text" and said.stdout == "text"


async def test_local_transport_sees_the_same_cluster(slurm_dir, monkeypatch, backend):
    monkeypatch.setenv("SLURM_CONF", str(CONF))
    local = SlurmBackend(local_cluster())
    try:
        assert {n.name: n.gpus_total for n in await local.list_nodes()} == {
            n.name: n.gpus_total for n in await backend.list_nodes()
        }
        assert local.transport.description == "local commands" and "ssh" in backend.transport.description
        assert local.transport.history[0][0] == "sinfo"
    finally:
        await local.close()


async def test_describe_names_the_command_slurm_keeps_none_of(backend, slurm_jobs, tmp_path, monkeypatch):
    """Slurm keeps no command for a script given on stdin (as this console sends every job) or with
    --wrap: the detail shows the command of the spec this console submitted the job with, else says where
    the script came from; a script sbatch'ed from a file keeps its path."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    job_id = slurm_jobs.add(await backend.submit(spec(sleeper("yf-described", 60))))
    assert squeue_job(job_id)["command"] == ""  # (what Slurm keeps)
    assert re.search(
        r"^Command:\s+\(the batch script itself: given on stdin or with --wrap\)$", await backend.describe(job_id), re.M
    )
    submitted.remember(backend.name, job_id, spec(sleeper("yf-described", 60)))  # as Submit and the CLI do
    assert re.search(r"^Command:\s+sleep 60$", await backend.describe(job_id), re.M)
    script = JOBS / f"yf-described-{os.getpid()}.sh"
    script.write_text("#!/bin/sh\nsleep 60\n")
    by_file = slurm_jobs.add(
        slurm("sbatch", "--parsable", "-p", "cpu", "--hold", "-o", "/dev/null", str(script)).strip()
    )
    assert re.search(rf"^Command:\s+{re.escape(str(script))}$", await backend.describe(by_file), re.M)
