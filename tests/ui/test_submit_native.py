"""The Submit screen's Load takes job files as users have them: an sbatch script fills the form from
its directives, previews the script as written (what the form changes as sbatch options) with the
capacity verdict, and submits it to the real Slurm cluster; a Kubernetes manifest picks the cluster
that takes it, previews the file and says that its own fields are changed in the file."""

from __future__ import annotations

import re
from dataclasses import replace

from fakes.backend import FakeBackend
from textual.widgets import Input
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.screens.submit.screen import SubmitScreen

SCRIPT = """#!/bin/sh
#SBATCH --job-name={name}
#SBATCH --nodes=2
#SBATCH --gres=gpu:a100:1
#SBATCH -p gpu --time=00:03:00
#SBATCH --mail-type=END
#SBATCH --mem=100M --cpus-per-task=1
#SBATCH --output=/dev/null
echo "as  written"
"""


async def open_submit(pilot) -> SubmitScreen:
    await pilot.press("3")
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, SubmitScreen) and pilot.app.screen)
    await wait_for(pilot, lambda: screen.draft_ready, what="draft checked")
    return screen


async def load(pilot, screen: SubmitScreen, path: str) -> None:
    box = screen.query_one("#spec-path", Input)
    box.focus()
    box.value = path
    await pilot.press("enter")


def text(screen, selector: str) -> str:
    return str(screen.query_one(selector).render())


async def test_loading_an_sbatch_script_fills_the_form_previews_it_and_submits_it(
    home, slurm_dir, slurm_jobs, tmp_path
):
    from slurmhelpers import slurm, ssh_cluster

    name = "yf-native-form"
    path = tmp_path / "train.sbatch"
    path.write_text(SCRIPT.format(name=name))
    cluster = replace(ssh_cluster(nodes_refresh_seconds=0.5), refresh_seconds=0.5)
    app = make_app(cluster)
    async with app.run_test(size=(160, 60)) as pilot:
        screen = await open_submit(pilot)
        await load(pilot, screen, str(path))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == name, what="the script's name")
        value = {wid: screen.query_one(f"#{wid}", Input).value for wid in ("nodes", "gpus", "cpus", "memory")}
        assert value == {"nodes": "2", "gpus": "1", "cpus": "1", "memory": "100M"}
        assert screen.query_one("#slurm-partition", Input).value == "gpu"
        assert screen.query_one("#slurm-time", Input).value == "00:03:00"
        assert screen.query_one("#slurm-gpu_type", Input).value == "a100"
        assert str(screen.query_one("#kind").value) == "slurm"
        await wait_for(pilot, lambda: text(screen, "#preview").startswith("# sbatch"), what="the preview")
        preview = text(screen, "#preview")
        head, script = preview.split("\n", 1)
        assert head == "# sbatch --parsable --comment=yanflow:DRY-RUN < script"
        assert script.rstrip("\n") == path.read_text().rstrip("\n")  # the file as written, --mail-type too
        await wait_for(pilot, lambda: "fits now" in text(screen, "#capacity"), what="the capacity verdict")

        nodes = screen.query_one("#nodes", Input)
        nodes.focus()
        nodes.value = "3"
        await wait_for(pilot, lambda: "--nodes=3" in text(screen, "#preview").split("\n", 1)[0], what="the override")
        assert text(screen, "#preview").split("\n", 1)[1].rstrip("\n") == path.read_text().rstrip("\n")
        await pilot.press("ctrl+s")
        _, job_id = await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        slurm_jobs.add(job_id)
        record = slurm("scontrol", "show", "job", "-o", job_id)
        assert f"JobName={name} " in record and "MailType=END" in record
        assert re.search(r"NumNodes=3\b", record) and "TresPerNode=gres:gpu:a100:1" in record


async def test_a_manifest_goes_to_the_cluster_that_takes_it_and_its_fields_are_the_file_s(
    home, emulator, kubeconfig, tmp_path
):
    from k8shelpers import cluster

    from yanflow_tui.config import ClusterConfig

    path = tmp_path / "job.yaml"
    path.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: from-file}\nspec:\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      containers: [{name: c, image: busybox, command: [sleep, '1']}]\n"
    )
    app = make_app(ClusterConfig("local", "local"), cluster(kubeconfig))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = await open_submit(pilot)
        await load(pilot, screen, str(path))
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "from-file", what="loaded")
        assert str(screen.query_one("#cluster").value) == "k8s"  # the one that takes manifests
        await wait_for(pilot, lambda: text(screen, "#preview").startswith("# Job ml/from-file"), what="preview")
        assert text(screen, "#preview").split("\n", 2)[2].rstrip("\n") == path.read_text().rstrip("\n")
        name = screen.query_one("#name", Input)
        name.focus()
        name.value = "renamed"
        await wait_for(
            pilot,
            lambda: f"name: sent as written in {path.resolve()}: change it there" in text(screen, "#errors"),
            what="the problem",
        )
        assert screen.query_one("#submit").disabled
    assert emulator.mutations() == []


class SbatchFake(FakeBackend):
    """A fake that takes sbatch scripts as written and records what it was sent."""

    kind = "sbatchfake"
    capabilities = replace(FakeBackend.capabilities, native_files=frozenset({"sbatch"}))

    async def _submit_native(self, spec, tag, retry):
        self.calls.append(("native", spec))
        return "301"

    def _render_native(self, spec):
        return f"# as written\n{spec.native.text}"


async def test_a_restored_draft_of_an_sbatch_script_still_sends_the_script(home, tmp_path, register_backend):
    from yanflow_tui import drafts
    from yanflow_tui.config import ClusterConfig

    register_backend(SbatchFake)
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.format(name="drafted").replace("--nodes=2", "--nodes=1"))  # fits the fake's nodes
    draft = home / ".local" / "state" / "yanflow" / drafts.DRAFT_NAME
    cluster = ClusterConfig("fake", "sbatchfake", refresh_seconds=0.5)
    async with make_app(cluster).run_test(size=(160, 60)) as pilot:
        screen = await open_submit(pilot)
        await load(pilot, screen, str(path))
        await wait_for(pilot, lambda: draft.exists() and "drafted" in draft.read_text(), what="draft written")
    app = make_app(cluster)
    async with app.run_test(size=(160, 60)) as pilot:
        screen = await open_submit(pilot)
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "drafted", what="restored")
        await wait_for(pilot, lambda: text(screen, "#preview").startswith("# as written"), what="the script")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        (spec,) = [call for verb, call in app.hub.backend("fake").calls if verb == "native"]
        assert spec.native.text == path.read_text() and spec.name == "drafted"
