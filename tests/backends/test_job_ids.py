"""Job ids are checked per backend before any I/O: a fuzz over the id argument of every verb that
takes one (get_job, describe, raw_spec, stream_logs, cancel, perform, metrics, checkpoints), on every
backend. An id the backend's grammar refuses gets a ``BackendError`` and reaches nothing; an id it
accepts reaches the cluster only as the one object it names (the Kubernetes emulator records every
request path as sent; Slurm runs through a recording transport; Determined's fake master logs its
requests; the local backend's store and scheduler are watched)."""

from __future__ import annotations

import asyncio
import re
import string
import subprocess
import sys
from contextlib import contextmanager
from urllib.parse import parse_qs, unquote

import pytest
from dethelpers import CMD_ID, cache_token, make_backend, seed
from fakes.k8s_api import make_job, make_pod
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from k8shelpers import cluster as k8s_cluster

from yanflow_tui.backends.base import Backend
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.ids import check_path
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import LineStream, Transport
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError

# The cases that once reached a collection or a namespace, and their relatives.
EXACT = [
    ".",
    "..",
    "ml/.",
    "ml/..",
    "ml/",
    "/x",
    "a/b/c/d",
    "%2e%2e",
    "ml/%2e%2e",
    "ml/%2E%2E",
    "ml/%2F",
    "ml/a b",
    "ml/ tr",
    "ml/train ",
    "ml/trаin",
    "ml/ünïcode",
    "ML/train",
    "ml/Train",
    "",
    "/",
    "//",
    "ml//",
    "ml//x",
    "ml/x/",
    "./x",
    "../x",
    "./..",
    "ml/../x",
    "ml/x/..",
    "ml/x/.",
    "ml/train/.",
    "ml/train/..",
    "ml/train/",
    "ml/-x",
    "ml/x-",
    "ml/.x",
    "ml/x.",
    "ml/a..b",
    "-ml/x",
    "m_l/x",
    "ml/x\n",
    "ml/x\x00",
    "ml/" + "a" * 254,
    ("n" * 64) + "/x",
    "train",
    "ml/train",
    "ml/train/train-0",
    "default/x",
    "1",
    "12_3",
    "12_[1-3]",
    "٣",
    "1 2",
    "1;true",
    "-1",
    "--help",
    "1\n2",
    "exp-1",
    "exp-٣",
    "trial-120",
    "trial-",
    "exp-12/..",
    f"cmd-{CMD_ID[:8]}",
    f"cmd-{CMD_ID}",
    "cmd-a",
    "cmd-",
    "cmd-../../x",
    "nb-XYZXYZXY",
]
SEGMENTS = (
    st.sampled_from(
        [
            ".",
            "..",
            "",
            "ml",
            "train",
            "Train",
            "a b",
            "ü",
            "%2e%2e",
            "%2F",
            "x" * 64,
            "a" * 254,
            "a.b",
            "-a",
            "a-",
            "default",
            "train-0",
            " ",
            "\t",
            "?",
            "#",
            "%",
            "&",
            "=",
        ]
    )
    | st.text(max_size=10)
    | st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?", fullmatch=True)
)
IDS = (
    st.sampled_from(EXACT)
    | st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join)
    | st.text(max_size=24)
    | st.from_regex(r"[0-9]{1,6}(_[0-9]{1,3})?", fullmatch=True)
    | st.from_regex(r"(exp|trial)-[0-9]{1,4}|(cmd|nb|shell|tb)-[0-9a-f]{1,12}", fullmatch=True)
)
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def verbs(backend: Backend):
    """Every call that takes a job id, as (label, coroutine factory)."""

    async def logs(job_id):
        async for _ in backend.stream_logs(job_id, follow=False):
            pass

    out = [
        ("get_job", backend.get_job),
        ("describe", backend.describe),
        ("raw_spec", backend.raw_spec),
        ("stream_logs", logs),
        ("cancel", backend.cancel),
        ("metrics", backend.metrics),
        ("checkpoints", backend.checkpoints),
    ]
    out += [(f"perform {a}", lambda job_id, a=a: backend.perform(job_id, a)) for a in backend.capabilities.actions]
    return out


async def call_all(backend: Backend, job_id: str) -> dict[str, str]:
    """Run every verb; each either succeeds or raises BackendError (anything else fails the test)."""
    outcome = {}
    for label, call in verbs(backend):
        try:
            await asyncio.wait_for(call(job_id), 20)
            outcome[label] = "ok"
        except BackendError as exc:
            assert "\n" not in str(exc).strip() or label == "describe", f"{label}: a one-line error, got {exc}"
            outcome[label] = str(exc)
    return outcome


@contextmanager
def event_loop():
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


# -- Kubernetes -----------------------------------------------------------------------------------


def dns_label(text: str) -> bool:
    allowed = set(string.ascii_lowercase + string.digits + "-")
    return 0 < len(text) <= 63 and set(text) <= allowed and text[0] != "-" and text[-1] != "-"


def k8s_parts(job_id: str) -> tuple[str, str, str | None] | None:
    """The oracle: ``namespace/name[/pod]`` of DNS-1123 names, else None."""
    parts = job_id.split("/")
    if len(parts) not in (2, 3) or not dns_label(parts[0]):
        return None
    if not all(0 < len(p) <= 253 and all(dns_label(label) for label in p.split(".")) for p in parts[1:]):
        return None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


COLLECTIONS = {"/api/v1/nodes", "/api/v1/namespaces/ml/pods", "/apis/batch/v1/namespaces/ml/jobs"}
OBJECT = re.compile(
    r"/(?:api/v1|apis/batch/v1)/namespaces/(?P<ns>[^/]+)/(?P<kind>jobs|pods|services|events)"
    r"(?:/(?P<name>[^/]+)(?P<sub>/log)?)?"
)


def background(method: str, raw: str) -> bool:
    """The watches of the backend's own caches (not caused by the id under test)."""
    path, _, query = raw.partition("?")
    return method == "GET" and path in COLLECTIONS and "watch=" in query.lower()


def pods_by_job(emu) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in emu.objects("pods"):
        out.setdefault((p["metadata"].get("labels") or {}).get("job-name"), set()).add(p["metadata"]["name"])
    return out


def assert_names_one_object(pods: dict[str, set[str]], job_id: str, method: str, raw: str) -> None:
    """``raw`` (a request path as sent) names exactly the object ``job_id`` names (or one pod of its
    job, or the events of one of those): never a collection, a namespace or a parent."""
    parts = k8s_parts(job_id)
    assert parts is not None, f"{job_id!r} is not a valid id but {method} {raw} was sent"
    namespace, name, pod = parts
    path, _, query = raw.partition("?")
    match = OBJECT.fullmatch(path)
    assert match, f"{method} {raw} (for {job_id!r}) does not name one namespaced object"
    assert unquote(match["ns"]) == namespace, f"{method} {raw}: namespace is not {namespace!r}"
    check_path(raw)  # no empty, dot or encoded-slash segment
    pods_of_job = pods.get(name, set())
    if match["kind"] == "events":
        assert method == "GET" and match["name"] is None
        selector = parse_qs(query)["fieldSelector"][0]
        assert selector.startswith("involvedObject.name=")
        target = selector.split("=", 1)[1]
        assert target in ({pod} if pod else {name} | pods_of_job), f"events of {target!r} for {job_id!r}"
        return
    assert match["name"] is not None, f"{method} {raw} names a collection (for {job_id!r})"
    target = unquote(match["name"])
    if match["kind"] == "pods":
        assert method == "GET", f"{method} {raw}: only reads of pods"
        assert target == pod if pod else target in pods_of_job, f"{raw}: pod {target!r} is not {job_id!r}'s"
    else:
        assert pod is None, f"{method} {raw}: a pod's id touched its job"
        assert target == name, f"{method} {raw}: {target!r} is not {name!r}"


def run_fuzz(fuzz, loop, backend) -> None:
    """The exact cases first, then hypothesis's own; the backend closed either way."""
    try:
        for case in EXACT:
            fuzz.hypothesis.inner_test(case)
        fuzz()
    finally:
        loop.run_until_complete(backend.close())


def test_kubernetes_ids_reach_only_the_object_they_name(emulator, kubeconfig):
    emulator.put("jobs", make_job("train", "ml"))
    emulator.put("pods", make_pod("train-0", "ml", job="train"))
    backend = KubernetesBackend(k8s_cluster(kubeconfig), watch_seconds=3600)
    with event_loop() as loop:
        loop.run_until_complete(backend.list_jobs())  # caches synced: their watches are background
        seen: list[str] = []

        @FUZZ
        @given(IDS)
        def fuzz(job_id):
            seen.append(job_id)
            before, pods = len(emulator.raw_requests), pods_by_job(emulator)
            outcome = loop.run_until_complete(call_all(backend, job_id))
            sent = [(m, p) for m, p in emulator.raw_requests[before:] if not background(m, p)]
            if k8s_parts(job_id) is None:
                assert not sent, f"{job_id!r} is refused, yet it sent {sent}"
                assert all(v != "ok" for v in outcome.values()), outcome
                assert all(
                    "not a Kubernetes job id" in v or "cannot" in v or "no metrics" in v or "no checkpoints" in v
                    for v in outcome.values()
                ), outcome
            for method, raw in sent:
                assert_names_one_object(pods, job_id, method, raw)
            if emulator.get("jobs", "ml", "train") is None:  # a fuzzed cancel of ml/train: put it back
                emulator.put("jobs", make_job("train", "ml"))
                emulator.put("pods", make_pod("train-0", "ml", job="train"))

        try:
            for case in EXACT:  # every exact case, then the generated ones
                fuzz.hypothesis.inner_test(case)
            fuzz()
        finally:
            loop.run_until_complete(backend.close())
    assert len(seen) >= len(EXACT) + 50


def test_cli_cancel_of_a_dot_id_sends_nothing(emulator, kubeconfig, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - name: k8s\n    kind: kubernetes\n    kubeconfig: {kubeconfig}\n")
    for job_id in ("..", ".", "ml/..", "ml/."):
        before = len(emulator.raw_requests)
        result = subprocess.run(
            [sys.executable, "-m", "yanflow_tui", "--config", str(config), "cancel", "--cluster", "k8s", "--", job_id],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0
        assert result.stderr.count("\n") == 1 and "not a Kubernetes job id" in result.stderr, result.stderr
        assert "cancelled" not in result.stdout + result.stderr
        assert emulator.raw_requests[before:] == []


# -- Slurm ----------------------------------------------------------------------------------------


class RecordingTransport(Transport):
    """Answers every command with success and no jobs; ``history`` keeps every argv."""

    async def _exec(self, script: str) -> tuple[int, str, str]:
        return 0, ('{"jobs": []}' if "--json" in script else ""), ""

    async def _stream(self, script: str) -> LineStream:
        async def lines():
            return
            yield  # pragma: no cover

        async def closer():
            pass

        return LineStream(lines(), closer)


SLURM_ID = re.compile(r"[0-9]+(_([0-9]+|\[[0-9,%-]+\]))?", re.ASCII)


def test_slurm_ids_are_checked_before_any_command():
    transport = RecordingTransport()
    backend = SlurmBackend(ClusterConfig("slurm", "slurm"), transport=transport)
    with event_loop() as loop:

        @FUZZ
        @given(IDS)
        def fuzz(job_id):
            transport.history.clear()
            outcome = loop.run_until_complete(call_all(backend, job_id))
            if not SLURM_ID.fullmatch(job_id):
                assert transport.history == [], f"{job_id!r} is refused, yet it ran {transport.history}"
                assert all(v != "ok" for v in outcome.values()), outcome
            for argv in transport.history:  # the id travels as one whole argument, after -- or -j
                if argv[0] in ("scancel", "scontrol") or "-j" in argv:
                    assert job_id in argv, argv
                if argv[0] == "scancel":
                    assert argv == ("scancel", "--", job_id), argv

        for case in EXACT:
            fuzz.hypothesis.inner_test(case)
        fuzz()


# -- Determined -----------------------------------------------------------------------------------

DET_ID = re.compile(r"(exp|trial)-(0|[1-9][0-9]{0,17})|(cmd|nb|shell|tb)-[0-9a-f][0-9a-f-]{7,63}", re.ASCII)


def test_determined_ids_are_checked_before_any_request(master):
    cache_token(master)
    seed(master)
    backend = make_backend(master)
    with event_loop() as loop:
        loop.run_until_complete(backend.list_jobs())

        @FUZZ
        @given(IDS)
        def fuzz(job_id):
            before = len(master.requests)
            outcome = loop.run_until_complete(call_all(backend, job_id))
            sent = master.requests[before:]
            if not DET_ID.fullmatch(job_id):
                assert sent == [], f"{job_id!r} is refused, yet it sent {[(r.method, r.path) for r in sent]}"
                assert all(v != "ok" for v in outcome.values()), outcome
            number = job_id.partition("-")[2]
            for r in sent:  # a mutation names the object of the id, nothing else
                if r.method != "GET":
                    segments = r.path.split("/")
                    assert any(s == number or (len(number) >= 8 and s.startswith(number)) for s in segments), (
                        f"{r.method} {r.path} for {job_id!r}"
                    )

        run_fuzz(fuzz, loop, backend)


# -- local ----------------------------------------------------------------------------------------


def test_local_ids_are_checked_before_the_store_is_touched(home, fake_nvml):
    from yanflow_tui.backends.local.backend import LocalBackend

    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=home / "state")
    touched: list[str] = []

    class Watched:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            touched.append(name)
            return getattr(self._inner, name)

    backend.store = Watched(backend.store)
    schedule = backend._schedule
    backend._schedule = lambda: (touched.append("schedule"), schedule())[1]
    with event_loop() as loop:

        @FUZZ
        @given(IDS)
        def fuzz(job_id):
            touched.clear()
            outcome = loop.run_until_complete(call_all(backend, job_id))
            valid = job_id.isascii() and job_id.isdigit() and len(job_id) <= 18
            if not valid:
                assert touched == [], f"{job_id!r} is refused, yet it touched {touched}"
                assert all(v != "ok" for v in outcome.values()), outcome

        run_fuzz(fuzz, loop, backend)


def test_the_path_guard_refuses_dot_and_empty_segments():
    for bad in (
        "/api/v1/namespaces/ml/",
        "/apis/batch/v1/namespaces/ml/jobs/.",
        "/api/v1/namespaces/%2e%2E/pods",
        "/api/v1/namespaces/ml/pods/a%2Fb",
        "/api//v1",
    ):
        with pytest.raises(BackendError):
            check_path("https://h:6443" + bad)
    check_path("https://h:6443/apis/batch/v1/namespaces/ml/jobs/train?propagationPolicy=Background")
