"""A submit never lies about its outcome, against the REAL loopback Slurm cluster with a faulting
login node: a private sshd (``private_sshd``) puts an ``sbatch`` wrapper first on the login node's
PATH that runs the real sbatch and then drops its own SSH session, or outlives the command timeout,
or sleeps past it before running sbatch (the job is created late). Each case answers "submitted as
N" or "unknown: check tag T", never "refused", and a retry with the tag (backend, CLI ``--tag``,
the Submit screen) creates no second job: squeue is the ground truth, counted by tag."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import yaml
from private_sshd import PrivateSshd
from slurmhelpers import slurm, ssh_cluster
from textual.widgets import Input
from uihelpers import make_app
from waiting import async_wait_until, wait_for, wait_until

from yanflow_tui import cli, drafts
from yanflow_tui.backends.slurm import backend as slurm_module
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.cli.context import EXIT_UNKNOWN
from yanflow_tui.errors import BackendError, SubmitUnknown
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.spec import parse_spec

TIMEOUT = 10.5  # the smallest command_timeout allowed is just over Slurm's MessageTimeout (10 s)
SHORT_LOOKUP = 3.0  # the lookup window in the "created too late to be found" cases

WRAPPERS = {
    # the real sbatch takes the job, then the session dies before its answer leaves the login node
    "drop": '/usr/bin/sbatch "$@" >/dev/null 2>&1\nkill -9 $PPID\nsleep 5\n',
    # the real sbatch takes the job (and prints its id), then nothing comes back before the timeout
    "hang": '/usr/bin/sbatch "$@"\nsleep 25\n',
    # nothing happens until after the timeout; then sbatch creates the job (late)
    "late": 'sleep {delay}\nexec /usr/bin/sbatch "$@"\n',
}


def spec_text(name: str) -> str:
    return (
        f"name: {name}\nkind: slurm\ncommand: sleep 120\nresources: {{cpus: 1, memory: 100M}}\n"
        "slurm: {partition: cpu, output: /dev/null}\n"
    )


NAMES: list[str] = []  # every job name a test used: its jobs are cancelled at teardown, found or not


def unique(prefix: str) -> str:
    NAMES.append(f"{prefix}-{secrets.token_hex(3)}")
    return NAMES[-1]


@pytest.fixture(autouse=True)
def cancel_by_name():
    yield
    while NAMES:
        slurm("scancel", f"--name={NAMES.pop()}", check=False)


def holders(tag: str) -> list[str]:
    """Ids of the jobs squeue shows carrying ``tag`` (the ground truth, read directly)."""
    out = slurm("squeue", "-h", "-a", "-t", "all", "-o", "%F|%k")
    return sorted({line.split("|", 1)[0] for line in out.splitlines() if line.split("|", 1)[-1] == f"yanflow:{tag}"})


def tag_of(job_id: str) -> str:
    comment = slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%k").strip()
    assert comment.startswith("yanflow:"), comment
    return comment.removeprefix("yanflow:")


class Login:
    """A faulting login node: the private sshd with ``sbatch`` wrapped as ``mode`` says."""

    def __init__(self, root: Path, mode: str, delay: float = 0.0):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        wrapper = self.bin / "sbatch"
        wrapper.write_text("#!/bin/sh\n" + WRAPPERS[mode].format(delay=delay))
        wrapper.chmod(0o755)
        self.sshd = PrivateSshd(workdir=root / "sshd", path_prefix=self.bin)

    def __enter__(self) -> Login:
        self.sshd.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sshd.kill_sessions()
        self.sshd.stop()

    def cluster(self):
        return self.sshd.cluster(command_timeout=TIMEOUT)

    def config_file(self, path: Path) -> str:
        c = self.cluster()
        entry = {"name": c.name, "kind": "slurm", **c.options}
        path.write_text(yaml.safe_dump({"clusters": [entry]}))
        return str(path)


@pytest.fixture
def faulty(tmp_path, slurm_dir):
    logins: list[Login] = []

    def make(mode: str, delay: float = 0.0) -> Login:
        login = Login(tmp_path / f"login-{len(logins)}", mode, delay).__enter__()
        logins.append(login)
        return login

    yield make
    for login in logins:
        login.__exit__()


def record_sbatch(backend: SlurmBackend) -> list[object]:
    """What each sbatch run gave the backend: a Result, or the exception it raised."""
    seen: list[object] = []
    real = backend.transport.run

    async def run(argv, stdin_data=None, timeout=None):
        try:
            result = await real(argv, stdin_data, timeout)
        except BaseException as exc:
            if argv[0] == "sbatch":
                seen.append(exc)
            raise
        if argv[0] == "sbatch":
            seen.append(result)
        return result

    backend.transport.run = run
    return seen


async def submitted_and_retried(login: Login, slurm_jobs, name: str) -> tuple[str, str, list[object]]:
    """Submit through the faulting login node: it must answer with the job's id (found by its tag);
    a retry with that tag returns the same job and sends nothing."""
    backend = SlurmBackend(login.cluster())
    try:
        sbatch_runs = record_sbatch(backend)
        spec = parse_spec(spec_text(name), "t.yaml")
        job_id = slurm_jobs.add(await backend.submit(spec))
        tag = tag_of(job_id)
        assert holders(tag) == [job_id]
        assert await backend.submit(spec, tag=tag) == job_id  # the retry finds it...
        assert len(sbatch_runs) == 1  # ...before sending anything
        assert holders(tag) == [job_id]
        return job_id, tag, sbatch_runs
    finally:
        await backend.close()


# -- (a) the session drops after sbatch took the job ---------------------------------------------------


async def test_a_session_dropped_after_sbatch_is_submitted_as_its_job_not_refused(faulty, slurm_jobs, tmp_path, capsys):
    login = faulty("drop")
    job_id, tag, runs = await submitted_and_retried(login, slurm_jobs, unique("yf-drop"))
    run = runs[0]  # the client did see the drop (an exit with no status, or a lost connection)
    assert (isinstance(run, BackendError) and "connection lost" in str(run)) or run.returncode == 255, run


def test_cli_retry_with_the_tag_of_a_dropped_submit_prints_its_job_and_sends_nothing(
    faulty, slurm_jobs, tmp_path, capsys
):
    login = faulty("drop")
    config = login.config_file(tmp_path / "config.yaml")
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(spec_text(unique("yf-drop-cli")))
    assert cli.main(["--config", config, "submit", str(spec_file)]) == 0
    out = capsys.readouterr()
    job_id = slurm_jobs.add(out.out.strip())
    assert job_id.isdigit() and "refused" not in out.err, out
    tag = tag_of(job_id)
    assert cli.main(["--config", config, "submit", str(spec_file), "--tag", tag]) == 0
    assert capsys.readouterr().out.strip() == job_id
    assert holders(tag) == [job_id]


# -- (b) sbatch took the job, then the answer outlives the command timeout ------------------------------


async def test_an_answer_past_the_timeout_is_submitted_as_its_job(faulty, slurm_jobs):
    login = faulty("hang")
    _, _, runs = await submitted_and_retried(login, slurm_jobs, unique("yf-hang"))
    assert isinstance(runs[0], BackendError) and "did not answer" in str(runs[0])


# -- (c) the job is created after the timeout ----------------------------------------------------------


async def test_a_job_created_late_within_the_lookup_is_submitted_as_it(faulty, slurm_jobs):
    login = faulty("late", delay=TIMEOUT + 2)
    await submitted_and_retried(login, slurm_jobs, unique("yf-late"))


async def test_a_job_created_after_the_lookup_is_unknown_with_its_tag_and_a_retry_finds_it(
    faulty, slurm_jobs, monkeypatch
):
    monkeypatch.setattr(slurm_module, "LOOKUP_SECONDS", SHORT_LOOKUP, raising=False)
    login = faulty("late", delay=TIMEOUT + SHORT_LOOKUP + 6)
    backend = SlurmBackend(login.cluster())
    try:
        sbatch_runs = record_sbatch(backend)
        spec = parse_spec(spec_text(unique("yf-unknown")), "t.yaml")
        with pytest.raises(SubmitUnknown) as caught:
            await backend.submit(spec)
        tag = caught.value.tag
        assert str(caught.value).startswith(f"unknown: check tag {tag} on cluster ")
        job_id = slurm_jobs.add((await async_wait_until(lambda: holders(tag), 40, what="the late job"))[0])
        assert await backend.submit(spec, tag=tag) == job_id
        assert len(sbatch_runs) == 1 and holders(tag) == [job_id]
    finally:
        await backend.close()


def test_cli_says_unknown_with_exit_3_and_the_tag_and_a_retry_with_it_makes_no_second_job(
    faulty, slurm_jobs, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(slurm_module, "LOOKUP_SECONDS", SHORT_LOOKUP, raising=False)
    login = faulty("late", delay=TIMEOUT + SHORT_LOOKUP + 6)
    config = login.config_file(tmp_path / "config.yaml")
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(spec_text(unique("yf-unknown-cli")))
    assert cli.main(["--config", config, "submit", str(spec_file)]) == 3 == EXIT_UNKNOWN
    out = capsys.readouterr()
    assert out.out == "" and "refused" not in out.err and "Timeout" not in out.err
    first = out.err.splitlines()[0]
    assert first.startswith("yanflow-tui: error: unknown: check tag "), out.err
    tag = first.removeprefix("yanflow-tui: error: unknown: check tag ").split()[0]
    assert f"--tag {tag}" in out.err
    job_id = slurm_jobs.add(wait_until(lambda: holders(tag), 40, what="the late job")[0])
    assert cli.main(["--config", config, "submit", str(spec_file), "--tag", tag]) == 0
    assert capsys.readouterr().out.strip() == job_id
    assert holders(tag) == [job_id]


def test_cli_help_documents_the_unknown_exit_status(capsys):
    with pytest.raises(SystemExit):
        cli.main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "3 unknown" in text and "--tag TAG" in text


async def test_the_submit_screen_says_unknown_keeps_the_form_and_a_second_submit_reuses_the_tag(
    home, faulty, slurm_jobs, tmp_path, monkeypatch
):
    monkeypatch.setattr(slurm_module, "LOOKUP_SECONDS", SHORT_LOOKUP, raising=False)
    login = faulty("late", delay=TIMEOUT + SHORT_LOOKUP + 6)
    name = unique("yf-unknown-ui")
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(spec_text(name))
    app = make_app(login.cluster())
    notes: list[tuple[str, str]] = []
    real_notify = app.notify

    def notify(message, *args, title="", **kwargs):
        notes.append((title, str(message)))
        return real_notify(message, *args, title=title, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    draft = home / ".local" / "state" / "yanflow" / drafts.DRAFT_NAME
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        screen.query_one("#spec-path", Input).value = str(spec_file)
        await pilot.click("#load")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == name, what="loaded")
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        await wait_for(pilot, draft.exists, what="draft saved")
        await pilot.press("ctrl+s")
        title, message = await wait_for(
            pilot, lambda: next((n for n in notes if "unknown" in n[1]), None), timeout=60, what="the unknown outcome"
        )
        assert title == "Submit outcome unknown" and "refused" not in message
        tag = screen.unknown_submit[2]
        assert message.startswith(f"unknown: check tag {tag} on cluster ")
        assert screen.last_submitted is None and draft.exists()  # nothing cleared
        assert screen.query_one("#name", Input).value == name
        job_id = slurm_jobs.add((await async_wait_until(lambda: holders(tag), 40, what="the late job"))[0])
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="submit enabled again")
        await pilot.press("ctrl+s")  # the unchanged form: the same tag, looked up first
        assert await wait_for(pilot, lambda: screen.last_submitted, timeout=60, what="submitted") == (
            login.cluster().name,
            job_id,
        )
        assert holders(tag) == [job_id]
        assert screen.unknown_submit is None
        await wait_for(pilot, lambda: not draft.exists(), what="draft removed after the submit")


# -- (d) sbatch's own refusal is still "not submitted" -------------------------------------------------


async def test_a_genuine_refusal_is_not_submitted(slurm_dir, slurm_jobs):
    backend = SlurmBackend(ssh_cluster(command_timeout=TIMEOUT))  # the normal sshd, the real sbatch
    name = unique("yf-refused")
    spec = parse_spec(spec_text(name).replace("partition: cpu", "partition: no-such-partition"), "t.yaml")
    try:
        with pytest.raises(BackendError) as caught:
            await backend.submit(spec)
    finally:
        await backend.close()
    assert not isinstance(caught.value, SubmitUnknown)
    assert str(caught.value).startswith("not submitted: sbatch refused the job: ")
    assert "partition" in str(caught.value).lower()
    names = slurm("squeue", "-h", "-a", "-t", "all", "-o", "%j").split()
    assert name not in names


def test_cli_refusal_exits_1_and_a_bad_tag_is_refused_before_any_io(slurm_dir, tmp_path, capsys):
    config = str(Path(slurm_dir) / "yanflow.yaml")
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(spec_text(unique("yf-refused-cli")).replace("partition: cpu", "partition: nope"))
    assert cli.main(["--config", config, "submit", str(spec_file)]) == 1  # the capacity check stops it here
    assert "never fits: there is no partition nope" in capsys.readouterr().err
    assert cli.main(["--config", config, "submit", "--force", str(spec_file)]) == 1  # past it: sbatch's own no
    assert "not submitted: sbatch refused the job" in capsys.readouterr().err
    assert cli.main(["--config", config, "submit", "--force", str(spec_file), "--tag", "x; touch /tmp/nope"]) == 1
    assert "not a submit tag" in capsys.readouterr().err
