"""The Submit wizard: fields per backend and job kind, defaults from the config, errors under their
fields as you type, the debounced preview, the fits-now line, templates and the draft that survives a
restart. Pilot tests over the in-memory fakes, then over the real Slurm cluster and the Kubernetes
API emulator; plus every real backend's form rendering as it stands."""

from __future__ import annotations

import asyncio
import re
import stat
import tempfile
from contextlib import contextmanager
from dataclasses import replace

import pytest
import yaml
from fakes.backend import FakeBackend
from paths import SAMPLES
from textual.widgets import Input, OptionList, Select
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui import drafts
from yanflow_tui import formfields as ff
from yanflow_tui.backends import registry
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.formfields import FormField
from yanflow_tui.model import Gpu, GpuState, JobKind, Node
from yanflow_tui.screens.dialogs import ConfirmScreen, HelpScreen, PromptScreen
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.screens.templates import TemplatePickerScreen
from yanflow_tui.spec import spec_from_data


class NarrowBackend(FakeBackend):
    """A fake that runs only single and multi-node jobs, with fields of its own."""

    kind = "narrow"
    capabilities = replace(FakeBackend.capabilities, job_kinds=frozenset({JobKind.SINGLE, JobKind.MULTI_NODE}))

    def form_fields(self, kind):
        fields = [
            ff.NAME,
            ff.COMMAND_FIELD,
            *ff.resources(kind, cpus=False, memory=False),
            FormField(
                "slurm.partition", "Partition", "the pool", pool=True, default=self.config.options.get("partition", "")
            ),
        ]
        if kind is JobKind.MULTI_NODE:
            fields += [ff.launcher(), FormField("kubernetes.namespace", "Namespace", "where it runs")]
        return (*fields, ff.ENV_FIELD)

    submit_delay = 0.3  # a submit in flight long enough for a second ctrl+s to arrive during it

    async def _submit(self, spec):
        await asyncio.sleep(self.submit_delay)
        return await super()._submit(spec)

    def check_spec(self, spec):
        super().check_spec(spec)
        namespace = spec.section("kubernetes").get("namespace")
        if namespace and namespace != namespace.lower():
            raise BackendError(f"kubernetes.namespace: not a valid namespace name: {namespace!r}")


@pytest.fixture(autouse=True)
def fakes(register_backend):
    register_backend(FakeBackend)
    register_backend(NarrowBackend)


def hpc(**kw) -> ClusterConfig:
    return ClusterConfig("hpc", "fake", refresh_seconds=kw.pop("refresh_seconds", 0.5), **kw)


def small(**kw) -> ClusterConfig:
    return ClusterConfig("small", "narrow", refresh_seconds=0.5, **kw)


async def open_submit(pilot) -> SubmitScreen:
    app = pilot.app
    await pilot.press("3")
    screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
    await wait_for(pilot, lambda: screen.draft_ready, what="draft checked")
    return screen


def rows(screen) -> list[str]:
    """The ids of the field rows shown, in order."""
    return [row.id.removeprefix("row-") for row in screen.query(".field-row")]


def kind_options(screen) -> list[str]:
    overlay = screen.query_one("#kind", Select).query_one(OptionList)
    return [str(overlay.get_option_at_index(i).prompt).split(":")[0] for i in range(overlay.option_count)]


def text(screen, selector: str) -> str:
    return str(screen.query_one(selector).render())


async def choose(pilot, screen, selector: str, value: str, field_row: str | None = None) -> None:
    """Pick ``value`` in a Select and wait until the form shows the fields for it."""
    screen.query_one(selector, Select).value = value
    if field_row:
        await wait_for(pilot, lambda: field_row in rows(screen), what=f"field {field_row}")
    await pilot.pause()  # the Select's Changed message handled: the form follows the choice


async def no_submit_in_flight(pilot, app) -> None:
    """Wait until every submission the form started has finished: one sent has reached the backend by then."""
    await pilot.pause()  # the key handled: a submission it starts is a worker by now
    await wait_for(
        pilot, lambda: not any(w.group == "submit" and not w.is_finished for w in app.workers), what="no submit left"
    )


async def type_into(pilot, screen, selector: str, keys: str, clear: bool = True) -> None:
    widget = screen.query_one(selector)
    widget.focus()
    if clear and isinstance(widget, Input):
        widget.value = ""
    await pilot.press(*keys)


def field_error(screen, widget_id: str) -> str:
    error = screen.query_one(f"#err-{widget_id}")
    return str(error.render()) if error.display else ""


# -- kinds and fields ------------------------------------------------------------------------------------


async def test_kinds_are_the_clusters_and_only_the_chosen_kinds_fields_show(home):
    app = make_app(hpc(), small(options={"partition": "gpu"}))
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        assert kind_options(screen) == ["single", "multi-node", "experiment", "slurm"]
        assert "nodes" not in rows(screen)  # a single job runs on one node
        await choose(pilot, screen, "#kind", "experiment", "launcher")
        await choose(pilot, screen, "#cluster", "small")
        await wait_for(pilot, lambda: kind_options(screen) == ["single", "multi-node"], what="small's kinds")
        assert screen.query_one("#kind", Select).value == "single"  # small runs no experiments
        await wait_for(
            pilot,
            lambda: rows(screen) == ["name", "command", "gpus", "slurm-partition", "env"],
            what="small's single fields",
        )
        assert screen.query_one("#slurm-partition", Input).value == "gpu"  # the cluster's kind option
        await choose(pilot, screen, "#kind", "multi-node", "kubernetes-namespace")
        assert rows(screen) == [
            "name",
            "command",
            "nodes",
            "gpus",
            "slurm-partition",
            "launcher",
            "kubernetes-namespace",
            "env",
        ]
        assert "image" not in rows(screen)  # small's backend does not use it


async def test_form_starts_from_the_cluster_defaults_without_overwriting_what_was_typed(home):
    defaults = {"kind": "multi-node", "image": "pytorch:2.4", "resources": {"gpus": 8, "nodes": 4}}
    app = make_app(hpc(defaults=defaults), small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        assert screen.query_one("#kind", Select).value == "multi-node"
        assert screen.query_one("#image", Input).value == "pytorch:2.4"
        assert screen.query_one("#gpus", Input).value == "8"
        assert screen.query_one("#nodes", Input).value == "4"
        await type_into(pilot, screen, "#gpus", "2")
        await choose(pilot, screen, "#cluster", "small")
        await wait_for(pilot, lambda: "slurm-partition" in rows(screen), what="small's fields")
        assert screen.query_one("#gpus", Input).value == "2"  # typed: kept
        assert screen.query_one("#nodes", Input).value == "1"  # not typed: small has no default
        await choose(pilot, screen, "#cluster", "hpc", "image")
        assert screen.query_one("#image", Input).value == "pytorch:2.4"
        assert screen.query_one("#nodes", Input).value == "4"
        assert screen.query_one("#gpus", Input).value == "2"


async def test_the_wizard_keys_show_in_the_help_with_their_ids(home):
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        await open_submit(pilot)
        await pilot.press("question_mark")  # focus starts on the cluster chooser: ? is help
        shown = await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen, what="help")
        keys = str(shown.query_one("#help-text").render())
        for binding_id in (
            "submit-form", "load-spec", "pick-template", "save-template", "reset-form", "leave-field",
            "submit-open-editor",
        ):  # fmt: skip
            assert binding_id in keys


# -- errors, preview, capacity -------------------------------------------------------------------------


async def test_errors_show_under_their_fields_as_you_type(home):
    app = make_app(small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await type_into(pilot, screen, "#name", "demo")
        await type_into(pilot, screen, "#command", "python train.py")
        await type_into(pilot, screen, "#gpus", "two")
        await wait_for(
            pilot,
            lambda: 'expected a whole number >= 0, got "two"' in field_error(screen, "gpus"),
            what="error under GPUs",
        )
        assert 'resources.gpus: expected a whole number >= 0, got "two"' in text(screen, "#errors")
        assert field_error(screen, "name") == "" and screen.query_one("#submit").disabled
        await type_into(pilot, screen, "#gpus", "1")
        await wait_for(pilot, lambda: field_error(screen, "gpus") == "", what="error gone")
        assert text(screen, "#errors") == "none" and not screen.query_one("#submit").disabled

        await type_into(pilot, screen, "#env", "JUST_A_NAME", clear=False)
        await wait_for(pilot, lambda: "expected NAME=value" in field_error(screen, "env"), what="env error")
        screen.query_one("#env").text = "A=1"
        await wait_for(pilot, lambda: field_error(screen, "env") == "", what="env ok")

        # A backend's own check lands under the field it names.
        await choose(pilot, screen, "#kind", "multi-node", "kubernetes-namespace")
        await type_into(pilot, screen, "#kubernetes-namespace", "ML")
        await wait_for(
            pilot,
            lambda: "not a valid namespace name" in field_error(screen, "kubernetes-namespace"),
            what="backend error under its field",
        )
        assert screen.query_one("#row-kubernetes-namespace").has_class("has-error")


async def test_preview_follows_typing(home):
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await type_into(pilot, screen, "#command", "echo hi")
        await type_into(pilot, screen, "#name", "first")
        await wait_for(pilot, lambda: "name: first" in text(screen, "#preview"), what="preview")
        await pilot.press(*"-second")
        await wait_for(pilot, lambda: "name: first-second" in text(screen, "#preview"), what="preview updated")
        await type_into(pilot, screen, "#gpus", "x")
        await wait_for(pilot, lambda: "name: first" not in text(screen, "#preview"), what="no preview of a bad form")


async def test_fits_now_follows_the_request_the_pool_and_the_nodes_data(home):
    app = make_app(small(options={"partition": "gpu"}))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["small"].nodes, what="nodes")
        screen = await open_submit(pilot)
        capacity = lambda: text(screen, "#capacity")  # noqa: E731
        await choose(pilot, screen, "#kind", "multi-node", "nodes")
        await type_into(pilot, screen, "#nodes", "2")
        await type_into(pilot, screen, "#gpus", "4")
        await wait_for(
            pilot,
            lambda: (
                "never fits: only 1 of 2 nodes in partition gpu that could take it are in "
                "service (drain); the job needs 2" in capacity()
            ),
            what="never: gpu02 is drained",
        )
        assert "gpu: 0/2 whole nodes free, 4/16 GPUs free" in capacity()
        await type_into(pilot, screen, "#slurm-partition", "cpu")
        await wait_for(
            pilot, lambda: "never fits: there is no partition cpu (there are: gpu)" in capacity(), what="other pool"
        )
        assert "never fits: there is no partition cpu" in text(screen, "#errors")
        await type_into(pilot, screen, "#slurm-partition", "gpu")
        await type_into(pilot, screen, "#nodes", "1")
        await type_into(pilot, screen, "#gpus", "8")
        await wait_for(
            pilot,
            lambda: "waits: 0 nodes in partition gpu can take 8 GPUs now, 1 needed" in capacity(),
            what="waits: gpu01 is half busy",
        )
        assert "never" not in text(screen, "#errors")
        await type_into(pilot, screen, "#nodes", "2")
        await type_into(pilot, screen, "#gpus", "4")
        backend = NarrowBackend.instances[-1]
        backend.nodes[1] = Node(
            "small",
            "gpu02",
            "idle",
            ("gpu",),
            64,
            0,
            512000,
            0,
            "A100",
            8,
            0,
            tuple(Gpu(i, GpuState.FREE) for i in range(8)),
        )  # back from maintenance
        app.request_refresh("small")
        await wait_for(
            pilot,
            lambda: "fits now: 2 nodes in partition gpu can take 4 GPUs now, 2 needed" in capacity(),
            what="fits after the nodes refresh",
        )
        assert "gpu: 1/2 whole nodes free, 12/16 GPUs free" in capacity()


# -- templates ------------------------------------------------------------------------------------------


def form_state(screen) -> dict:
    """What the form shows: cluster, kind, the fields and each field's text."""
    from yanflow_tui.screens.submit.form import widget_text

    return {
        "cluster": screen.query_one("#cluster", Select).value,
        "kind": screen.query_one("#kind", Select).value,
        "rows": rows(screen),
        **{f.key: widget_text(screen.query_one(f"#{f.widget_id}")) for f in screen.form.fields},
    }


async def test_saved_template_loads_back_into_the_same_form(home):
    app = make_app(small(options={"partition": "gpu"}))
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await choose(pilot, screen, "#kind", "multi-node", "launcher")
        await type_into(pilot, screen, "#name", "ddp run [0]")
        screen.query_one("#command").text = "echo start\npython train.py --lr 1e-3"
        await type_into(pilot, screen, "#gpus", "8")
        screen.query_one("#launcher", Select).value = "deepspeed"
        screen.query_one("#env").text = "NCCL_DEBUG=WARN\nA=1:2"
        await wait_for(
            pilot,
            lambda: (
                text(screen, "#errors") == "none"
                and screen.form_data()[0].get("env") == {"NCCL_DEBUG": "WARN", "A": "1:2"}
                and screen.form_data()[0].get("launcher") == "deepspeed"
            ),
            what="valid form",
        )
        saved = form_state(screen)

        await pilot.press("escape", "ctrl+b")
        prompt = await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen) and app.screen, what="name prompt")
        assert prompt.query_one(Input).value == "ddp-run-0"
        await pilot.press("enter")
        path = home / ".config" / "yanflow" / "templates" / "ddp-run-0.yaml"
        await wait_for(pilot, lambda: path.exists(), what="template file")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        data = yaml.safe_load(path.read_text())
        assert data["command"] == "echo start\npython train.py --lr 1e-3" and "command: |" in path.read_text()
        spec_from_data(data)  # a valid spec file

        # Saving again under the same name asks first; "no" leaves the file alone.
        mtime = path.stat().st_mtime_ns
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen), what="prompt again")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="replace?")
        await pilot.press("n")
        assert path.stat().st_mtime_ns == mtime

        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="reset?")
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: screen.query_one("#name", Input).value == "" and "launcher" not in rows(screen),
            what="form reset",
        )

        await pilot.press("ctrl+l")
        picker = await wait_for(
            pilot, lambda: isinstance(app.screen, TemplatePickerScreen) and app.screen, what="picker"
        )
        assert picker.templates[0].name == "ddp-run-0" and picker.templates[0].origin == "mine"
        assert {"slurm-batch", "k8s-torchrun"} <= {t.name for t in picker.templates if t.origin == "sample"}
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "ddp run [0]", what="loaded")
        await wait_for(pilot, lambda: form_state(screen) == saved, what="the whole template in the form")


async def test_a_sample_with_fields_the_form_lacks_keeps_and_names_them(home):
    app = make_app(small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        screen.query_one("#spec-path", Input).value = str(
            SAMPLES.parent / "tests" / "data" / "k8s" / "torchrun-site.yaml"
        )
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "llama-finetune-2x8", what="loaded")
        assert screen.query_one("#kind", Select).value == "multi-node"
        assert screen.query_one("#command").text == "train.py --config configs/finetune.yaml --epochs 3"
        notes = text(screen, "#form-notes")
        assert "kubernetes.tolerations" in notes and "kubernetes.node_selector" in notes  # sent as they are
        assert "not sent: image" in notes  # small does not use these
        data = screen.form_data()[0]
        assert data["command"] == ["train.py", "--config", "configs/finetune.yaml", "--epochs", "3"]  # argv kept
        assert data["kubernetes"]["tolerations"][0]["key"] == "nvidia.com/gpu" and "image" not in data


# -- the draft -------------------------------------------------------------------------------------------


async def test_the_unfinished_form_survives_an_app_restart_and_goes_after_a_submit(home):
    path = home / ".local" / "state" / "yanflow" / drafts.DRAFT_NAME
    app = make_app(hpc(), small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await choose(pilot, screen, "#cluster", "small")
        await choose(pilot, screen, "#kind", "multi-node", "launcher")
        await type_into(pilot, screen, "#name", "half-done")
        await type_into(pilot, screen, "#gpus", "two")  # unfinished: not even valid yet
        await wait_for(pilot, lambda: path.exists() and "two" in path.read_text(), what="draft written")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    app = make_app(hpc(), small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "half-done", what="restored")
        assert screen.query_one("#cluster", Select).value == "small"
        assert screen.query_one("#kind", Select).value == "multi-node"
        assert screen.query_one("#gpus", Input).value == "two"
        await wait_for(pilot, lambda: "expected a whole number" in field_error(screen, "gpus"), what="its error")
        await type_into(pilot, screen, "#gpus", "1")
        await type_into(pilot, screen, "#command", "echo hi")
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        await pilot.press("ctrl+s", "ctrl+s")  # twice: still one submit
        await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        await wait_for(pilot, lambda: not path.exists(), what="draft removed")
        await no_submit_in_flight(pilot, app)  # a second submit, had one been sent, has landed by now
        assert [c[0] for c in app.hub.backend("small").mutations] == ["submit"]


async def test_a_corrupt_draft_is_reported_and_ignored(home):
    path = home / ".local" / "state" / "yanflow" / drafts.DRAFT_NAME
    path.parent.mkdir(parents=True)
    path.write_text("cluster: [unclosed\n")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50), notifications=True) as pilot:
        screen = await open_submit(pilot)
        await wait_for(pilot, lambda: "ignored the saved Submit draft" in screen_text(app), what="notification")
        assert "submit-draft.yaml:2" in screen_text(app)
        assert screen.query_one("#name", Input).value == ""
        await type_into(pilot, screen, "#name", "fresh")
        await wait_for(pilot, lambda: "fresh" in path.read_text(), what="a good draft replaces it")


def test_draft_file_checks():
    with pytest.raises(drafts.DraftError):
        drafts.parse_draft({"version": 1, "cluster": "a", "kind": "single", "spec": [], "form": {}})
    with pytest.raises(drafts.DraftError):
        drafts.parse_draft({"version": 1, "cluster": "a", "kind": "single", "spec": {}, "form": {"name": 3}})
    with pytest.raises(drafts.DraftError):
        drafts.parse_draft(["not", "a", "mapping"])
    draft = drafts.parse_draft(
        {
            "version": 1,
            "cluster": "a",
            "kind": "single",
            "spec": {"name": "x"},
            "form": {"name": "x"},
            "touched": ["name"],
        }
    )
    assert draft.touched == ("name",) and draft.spec == {"name": "x"}


# -- the field texts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, text, value",
    [
        (ff.GPUS, "8", 8),
        (ff.GPUS, "two", "two"),
        (ff.MEMORY, "32G", "32G"),
        (ff.ENV_FIELD, "A=1\nB=x=y", {"A": "1", "B": "x=y"}),
        (
            ff.MOUNTS_FIELD,
            "pvc:team/imagenet:/data:ro\n/scratch:/scratch",
            [
                {"source": "pvc:team/imagenet", "target": "/data", "read_only": True},
                {"source": "/scratch", "target": "/scratch", "read_only": False},
            ],
        ),
        (FormField("k.sel", "Sel", kind=ff.MAPPING), "a: b\nc: 1", {"a": "b", "c": 1}),
        (FormField("s.x", "X", kind=ff.FLAG), "true", True),
        (FormField("s.x", "X", kind=ff.FLAG), "", None),
        (FormField("s.x", "X", kind=ff.FLAG, default="true"), "", False),
    ],
)
def test_field_text_round_trip(field, text, value):
    assert ff.from_text(field, text) == (value, [])
    if not isinstance(value, str) or field.kind != ff.NUMBER:
        assert ff.from_text(field, ff.to_text(field, value))[0] == value


def test_problem_paths_find_their_fields():
    fields = [ff.ENV_FIELD, ff.MOUNTS_FIELD, FormField("determined.searcher.name", "Searcher"), ff.GPUS]
    assert ff.field_for("mounts[1].target", fields) == "mounts"
    assert ff.field_for("env.1BAD", fields) == "env"
    assert ff.field_for("determined.searcher", fields) == "determined.searcher.name"
    assert ff.field_for("launcher", fields) is None
    assert ff.message_field("/x/spec.yaml: resources.gpus: too many", fields) == ("resources.gpus", "too many")
    assert ff.message_field("cluster 'a' cannot run slurm jobs", fields) == (None, "cluster 'a' cannot run slurm jobs")


# -- the real backends' forms ---------------------------------------------------------------------------------

REAL = {
    "local": {},
    "slurm": {"partition": "gpu", "account": "ml"},
    "kubernetes": {"namespace": "ml", "kubeconfig": "/nonexistent"},
    "determined": {"master": "http://127.0.0.1:9"},
}


@pytest.mark.parametrize("kind", REAL)
def test_every_real_backend_form_renders_for_every_kind_it_runs(kind, home):
    backend = registry.create(ClusterConfig("c", kind, options=REAL[kind]))
    assert type(backend).__name__ != "UnavailableBackend" and backend.capabilities.job_kinds
    for job_kind in backend.capabilities.job_kinds:
        fields = backend.form_fields(job_kind)
        keys = [f.key for f in fields]
        assert keys[0] == "name" and "command" in keys and len(set(keys)) == len(keys)
        values = {f.key: ff.initial_text(f, {}) for f in fields}
        values.update(name="wizard", command="echo hi")
        data, problems = ff.form_data(fields, values)
        assert not problems
        spec = spec_from_data({**data, "kind": job_kind.value}, "<form>")
        assert backend.render(spec)  # the defaults make a job the backend takes
    if kind == "slurm":
        partition = next(f for f in backend.form_fields(JobKind.SLURM) if f.key == "slurm.partition")
        assert partition.default == "gpu" and partition.pool


# -- against the real Slurm cluster and the Kubernetes emulator -------------------------------------------------


async def test_slurm_form_shows_partition_previews_sbatch_and_submits_a_real_job(home, slurm_dir, slurm_jobs):
    from slurmhelpers import squeue_job, ssh_cluster
    from waiting import async_wait_until

    cluster = replace(
        ssh_cluster(nodes_refresh_seconds=0.5, partition="cpu"),
        refresh_seconds=0.5,
        defaults={"resources": {"cpus": 1, "memory": "100M"}},
    )
    app = make_app(cluster)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_submit(pilot)
        await choose(pilot, screen, "#kind", "slurm", "slurm-exclusive")  # not on the single form: switched
        assert {"slurm-partition", "slurm-account", "slurm-time", "slurm-gpu_type", "nodes"} <= set(rows(screen))
        assert "image" not in rows(screen)
        assert screen.query_one("#slurm-partition", Input).value == "cpu"  # from the cluster's options
        await type_into(pilot, screen, "#name", "yf-wizard")
        await type_into(pilot, screen, "#command", "echo wizard; sleep 2")
        await type_into(pilot, screen, "#slurm-output", "/dev/null")
        await type_into(pilot, screen, "#slurm-time", "00:02:00")
        await wait_for(pilot, lambda: "#SBATCH --time=00:02:00" in text(screen, "#preview"), what="sbatch")
        preview = text(screen, "#preview")
        assert preview.startswith("# sbatch --parsable") and "#SBATCH --partition=cpu" in preview
        assert "#SBATCH --job-name=yf-wizard" in preview and "#SBATCH --mem=100M" in preview
        await pilot.press("ctrl+s")
        cluster_name, job_id = await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        slurm_jobs.add(job_id)
        record = await async_wait_until(lambda: squeue_job(job_id), 20, "in squeue")
        assert record["name"] == "yf-wizard" and record["partition"] == "cpu"


async def test_kubernetes_multi_node_form_previews_an_indexed_job(home, emulator, kubeconfig):
    from k8shelpers import cluster

    emulator.add_node("gpu-a", 8)
    emulator.add_node("gpu-b", 8)
    app = make_app(cluster(kubeconfig, namespace="ml"))
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_submit(pilot)
        assert kind_options(screen) == ["single", "multi-node"]
        await choose(pilot, screen, "#kind", "multi-node", "launcher")
        assert {
            "image",
            "launcher",
            "nodes",
            "gpus",
            "mounts",
            "kubernetes-namespace",
            "kubernetes-node_selector",
        } <= set(rows(screen))
        assert screen.query_one("#kubernetes-namespace", Input).value == "ml"
        await type_into(pilot, screen, "#name", "ddp")
        await type_into(pilot, screen, "#command", "python train.py")
        await type_into(pilot, screen, "#gpus", "8")
        await type_into(pilot, screen, "#nodes", "2")
        screen.query_one("#mounts").text = "pvc:datasets/imagenet:/data:ro"
        await wait_for(pilot, lambda: "claimName: datasets" in text(screen, "#preview"), what="the manifests")
        preview = text(screen, "#preview")
        assert "completionMode: Indexed" in preview and "completions: 2" in preview and "kind: Service" in preview
        assert "nvidia.com/gpu: '8'" in preview
        await wait_for(
            pilot, lambda: "fits now: 2 nodes in cluster" in text(screen, "#capacity"), what="fits on the nodes"
        )


async def test_a_choice_value_that_looks_like_markup_is_shown_as_text():
    """A loaded file or draft may hold any text in a choice field; Select reads ``str`` options
    as markup, where ``[/y]`` crashed the app."""
    from textual.app import App

    from yanflow_tui.formfields import CHOICE
    from yanflow_tui.screens.submit.form import field_widget

    field = FormField("launcher", "Launcher", "", "none", CHOICE, ("none", "torchrun"))

    class One(App):
        def compose(self):
            yield field_widget(field, "x[/y]")

    app = One()
    async with app.run_test(size=(60, 10)) as pilot:
        select = await wait_for(pilot, lambda: app.query("Select") and app.query_one("Select"), what="the Select")
        assert select.value == "x[/y]"
        assert "x[/y]" in app.export_screenshot().replace("&#x2F;", "/")


async def test_a_loaded_file_fills_the_form_with_what_it_says_not_yaml_1_1_numbers(home, tmp_path):
    path = tmp_path / "numbers.yaml"
    path.write_text("name: n\ncommand: c\nslurm: {partition: 0x1F}\nenv: {MODE: 1:30}\n")
    app = make_app(small())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await load_path(pilot, screen, str(path))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "n", what="loaded")
        assert screen.query_one("#slurm-partition", Input).value == "0x1F"  # not 31
        data = screen.form_data()[0]
        assert data["slurm"]["partition"] == "0x1F" and data["env"] == {"MODE": "1:30"}  # not 90


# -- a failed load never leaves an old form armed (issue 18.3) ---------------------------------------------


async def load_path(pilot, screen, path: str) -> None:
    box = screen.query_one("#spec-path", Input)
    box.focus()
    box.value = path
    await pilot.press("enter")


def problems(screen) -> str:
    return text(screen, "#errors")


@pytest.mark.parametrize("bad", ["missing.yaml", "a-directory", "not-utf8.yaml"])
async def test_a_failed_load_after_a_submit_keeps_the_form_and_submits_nothing(home, tmp_path, bad):
    good = tmp_path / "good.yaml"
    good.write_text("name: first\ncommand: echo first\n")
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "not-utf8.yaml").write_bytes(b"name: x\xff\ncommand: c\n")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await load_path(pilot, screen, str(good))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "first", what="loaded")
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        await wait_for(pilot, lambda: not screen._submitting, what="submit done")

        await load_path(pilot, screen, str(tmp_path / bad))
        await wait_for(pilot, lambda: bad in problems(screen), what="the load error")
        assert screen.query_one("#name", Input).value == "first"  # the form is as it was
        assert screen.query_one("#submit").disabled
        assert "not loaded" in problems(screen)  # and says why Submit is off
        await pilot.press("ctrl+s")
        screen.action_submit()  # the key and the action both refuse
        await no_submit_in_flight(pilot, app)
        assert [c[0] for c in app.hub.backend("hpc").mutations] == ["submit"]

        # Clearing the box (or naming the loaded file again) is the form the user sees: Submit is back.
        screen.query_one("#spec-path", Input).value = ""
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="enabled again")
        assert "not loaded" not in problems(screen)


async def test_a_path_typed_but_not_loaded_disables_submit_until_it_is_loaded(home, tmp_path):
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("name: first\ncommand: echo first\n")
    second.write_text("name: second\ncommand: echo second\n")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await load_path(pilot, screen, str(first))
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        screen.query_one("#spec-path", Input).value = str(second)  # typed, not loaded yet
        await wait_for(pilot, lambda: screen.query_one("#submit").disabled, what="disabled")
        screen.action_submit()
        await no_submit_in_flight(pilot, app)
        assert app.hub.backend("hpc").mutations == []
        await load_path(pilot, screen, str(second))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "second", what="loaded")
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid again")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        assert [c[1].name for c in app.hub.backend("hpc").mutations] == ["second"]


async def test_a_failed_load_creates_no_second_job_on_the_local_backend(home, tmp_path):
    from yanflow_tui.backends.local.backend import LocalBackend

    good = tmp_path / "good.yaml"
    good.write_text("name: yf-formsafe\ncommand: sleep 30\n")
    app = make_app(ClusterConfig("local", "local", refresh_seconds=0.5))
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        backend = app.hub.backend("local")
        assert isinstance(backend, LocalBackend)
        await load_path(pilot, screen, str(good))
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        await pilot.press("ctrl+s")
        _cluster, job_id = await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        try:
            await wait_for(pilot, lambda: not screen._submitting, what="submit done")
            await load_path(pilot, screen, str(tmp_path / "missing.yaml"))
            await wait_for(pilot, lambda: "no such file" in problems(screen), what="the load error")
            await pilot.press("ctrl+s")
            await no_submit_in_flight(pilot, app)
            jobs = [j for j in await backend.list_jobs() if j.name == "yf-formsafe"]
            assert [j.id for j in jobs] == [job_id]
        finally:
            await backend.cancel(job_id)


async def test_each_problem_of_a_loaded_file_is_listed_once(home, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: twice\ncommand: c\nresources: {gpus: -1}\n")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await load_path(pilot, screen, str(path))
        await wait_for(pilot, lambda: f"{path}:3: resources.gpus:" in problems(screen), what="the located problem")
        await pilot.pause()  # the form's own check of the same field, had it been added, is in by now
        lines = [line for line in problems(screen).splitlines() if "gpus" in line]
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"{path}:3: resources.gpus:")  # the located one stays


class WatchOnlyBackend(FakeBackend):
    """A fake that is not read-only but cannot submit (the app keeps its Submit screen)."""

    kind = "watch-only"
    capabilities = replace(FakeBackend.capabilities, submit=False)


async def test_a_cluster_that_cannot_submit_then_submit_does_not_crash(home, register_backend):
    register_backend(WatchOnlyBackend)
    app = make_app(
        ClusterConfig("watch", "watch-only", refresh_seconds=0.5),
        ClusterConfig("ro", "fake", read_only=True, refresh_seconds=0.5),
    )
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        await wait_for(pilot, lambda: screen.draft_ready, what="draft checked")
        assert screen.query_one("#cluster", Select).value is Select.NULL
        assert "no cluster accepts submissions" in problems(screen)
        assert screen.query_one("#submit").disabled


async def test_a_file_with_control_characters_is_not_loaded_and_the_form_refuses_them(home, tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("name: kept\ncommand: echo kept\n")
    bad.write_bytes(b"name: other\ncommand: c\nworkdir: /w\x00x\n")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await load_path(pilot, screen, str(good))
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")
        await load_path(pilot, screen, str(bad))
        await wait_for(
            pilot,
            lambda: f"{bad}:3: workdir: contains a control character (U+0000 NUL)" in problems(screen),
            what="the located problem",
        )
        assert screen.query_one("#name", Input).value == "kept"  # nothing of that file reached the form
        assert screen.query_one("#submit").disabled
        screen.query_one("#spec-path", Input).value = ""
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="the kept form")

        screen.query_one("#name", Input).value = "bell\x07"  # pasted: refused, never stripped
        await wait_for(pilot, lambda: "U+0007" in field_error(screen, "name"), what="the field's problem")
        assert screen.query_one("#submit").disabled
        await pilot.press("ctrl+s")
        await no_submit_in_flight(pilot, app)
        assert app.hub.backend("hpc").mutations == []


# -- $EDITOR (ctrl+g) ------------------------------------------------------------------------------------


def fake_editor(tmp_path, monkeypatch, sed: str) -> None:
    """$EDITOR is a script that edits the file it is given with ``sed -i sed``."""
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\nsed -i '{sed}' \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the form's spec goes there


def suspends(app) -> list[str]:
    """App.suspend (not available in a pilot) recorded: the editor runs between these two."""
    said: list[str] = []

    @contextmanager
    def suspend():
        said.append("suspended")
        yield
        said.append("resumed")

    app.suspend = suspend
    return said


async def test_the_editor_key_edits_the_form_as_a_spec_or_the_loaded_file_and_loads_it_back(
    home, tmp_path, monkeypatch
):
    fake_editor(tmp_path, monkeypatch, "s/^name: .*/name: edited/")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        said = suspends(app)
        screen = await open_submit(pilot)
        await type_into(pilot, screen, "#name", "typed")
        await type_into(pilot, screen, "#command", "echo hi", clear=False)
        screen.focus_main()
        await pilot.press("ctrl+g")  # no file: the form as a spec in a temporary file
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "edited", what="edited, loaded back")
        assert said == ["suspended", "resumed"]
        assert screen.form_data()[0]["command"] == "echo hi"
        assert not list(tmp_path.glob("yanflow-spec-*"))  # loaded: the temporary file is gone
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="valid")

        path = tmp_path / "mine.yaml"
        path.write_text("name: mine\ncommand: echo mine\n")
        await load_path(pilot, screen, str(path))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "mine", what="loaded")
        screen.focus_main()
        await pilot.press("ctrl+g")  # a loaded file: that file, edited in place
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "edited", what="the file, again")
        assert path.read_text() == "name: edited\ncommand: echo mine\n"
        assert screen.query_one("#spec-path", Input).value == str(path)


async def test_an_edit_that_no_longer_loads_keeps_the_form_and_lists_the_problem_with_its_line(
    home, tmp_path, monkeypatch
):
    fake_editor(tmp_path, monkeypatch, "s/^command: .*/command: [unclosed/")
    app = make_app(hpc())
    async with app.run_test(size=(140, 50)) as pilot:
        suspends(app)
        screen = await open_submit(pilot)
        await type_into(pilot, screen, "#name", "kept")
        await type_into(pilot, screen, "#command", "echo kept", clear=False)
        screen.focus_main()
        await pilot.press("ctrl+g")
        kept = await wait_for(pilot, lambda: list(tmp_path.glob("yanflow-spec-*.yaml")), what="the edited spec kept")
        await wait_for(pilot, lambda: f"{kept[0]}:" in problems(screen), what="the problem, with file:line")
        assert re.search(rf"{re.escape(str(kept[0]))}:\d+", problems(screen))
        assert screen.query_one("#name", Input).value == "kept"  # the form as it was
        assert "[unclosed" in kept[0].read_text()  # the user's text stays for the next edit
