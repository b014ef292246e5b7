"""Job files recognised from their content (never their name): our spec, an sbatch script, a
Determined config, a Kubernetes manifest; one clear message for a file that is none; the sbatch
directives read into the spec; ``slurm.options`` checked with file:line; native submits refused by the
read-only gate before any I/O; a cluster that does not take a kind says which it takes."""

from __future__ import annotations

import pytest
from paths import SAMPLES

from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.errors import BackendError, ReadOnlyError, SpecError
from yanflow_tui.model import ClusterConfig, JobKind
from yanflow_tui.nativefiles import EXPECTED, load_job_file, read_job_text, recognise
from yanflow_tui.spec import parse_spec

SBATCH = """#!/bin/bash
#SBATCH -J train --nodes=2
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task 8
#SBATCH --mem=64G   # per node
#SBATCH -p gpu -t 1-00:00:00
#SBATCH --array=0-9%2 --qos=high --exclusive
#SBATCH --mail-type=END --dependency=afterok:12
#SBATCH -o logs/%x-%A_%a.out

srun python train.py --lr "$LR"
"""


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("job.yaml", "name: a\ncommand: 'true'\n", "spec"),
        ("job.txt", SBATCH, "sbatch"),  # the content says so, not the name
        ("run.yaml", SBATCH, "sbatch"),
        ("const.yaml", "name: m\nsearcher: {name: single, metric: loss}\nentrypoint: python3 train.py\n", "determined"),
        ("cmd.yaml", "entrypoint: [nvidia-smi]\nresources: {slots: 1}\n", "determined"),
        ("exp.yaml", "name: m\nhyperparameters: {lr: 0.1}\n", "determined"),
        ("train.sbatch", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "kubernetes"),
        ("pod.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}', "kubernetes"),
    ],
)
def test_the_kind_is_read_from_the_content(name, text, kind):
    assert recognise(text, name)[0] == kind


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("#!/bin/bash\necho hi\n", 1, "a script without #SBATCH lines"),
        ("#SBATCH -N 2\necho hi\n", 1, "#SBATCH lines but no #! line first (sbatch needs one, e.g. #!/bin/bash)"),
        ("- a\n- b\n", 1, "a YAML list, not a mapping"),
        ("", 1, "an empty file"),
        ("\n\nfoo: 1\nbar: 2\n", 3, "a mapping with the keys foo, bar"),
    ],
)
def test_a_file_that_is_none_of_these_says_what_was_expected(text, line, what):
    with pytest.raises(SpecError) as caught:
        recognise(text, "x.yaml")
    ((file, where, _, message),) = caught.value.problems
    assert (file, where) == ("x.yaml", line)
    assert message == f"{what}; {EXPECTED}"
    assert "an sbatch script" in str(caught.value) and "Kubernetes manifest" in str(caught.value)


def test_yaml_errors_keep_their_file_and_line():
    with pytest.raises(SpecError) as caught:
        recognise("name: a\ncommand: [unclosed\n", "bad.yaml")
    assert caught.value.problems[0][0] == "bad.yaml" and caught.value.problems[0][1] >= 2


def test_a_manifest_of_a_kind_that_is_not_a_job_is_named():
    with pytest.raises(SpecError, match=r"x\.yaml:2: kind: a Kubernetes Deployment cannot be submitted"):
        recognise("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "x.yaml")


def test_our_own_spec_still_gets_its_did_you_mean():
    with pytest.raises(SpecError, match='unknown key.*did you mean "command"'):
        read_job_text("name: a\ncomand: 'true'\n", "x.yaml")


def test_sbatch_directives_fill_the_spec_and_per_node_values_stay_per_node():
    spec = read_job_text(SBATCH, "run.sh")
    assert (spec.name, spec.kind) == ("train", JobKind.SLURM)
    res = spec.resources
    assert (res.nodes, res.gpus, res.cpus, res.memory_mb) == (2, 4, 8, 64 * 1024)  # per node, not x2
    assert spec.section("slurm") == {
        "gpu_type": "a100",
        "partition": "gpu",
        "time": "1-00:00:00",
        "array": "0-9%2",
        "qos": "high",
        "exclusive": True,
        "output": "logs/%x-%A_%a.out",
    }
    assert spec.command == 'srun python train.py --lr "$LR"'
    assert spec.native is not None and spec.native.text == SBATCH and spec.native.editable


def test_an_sbatch_script_without_a_name_takes_the_file_s_and_gpus_per_job_are_shared():
    spec = read_job_text("#!/bin/sh\n#SBATCH -N 2 --gpus=a100:8\nhostname\n", "/x/y/job.sh")
    assert spec.name == "job.sh" and spec.resources.gpus == 4 and spec.section("slurm")["gpu_type"] == "a100"


def test_a_bad_directive_is_reported_at_its_line():
    with pytest.raises(SpecError) as caught:
        read_job_text("#!/bin/sh\n#SBATCH -J ok\n#SBATCH --nodes=two\nhostname\n", "job.sh")
    assert [(p[1], p[2]) for p in caught.value.problems] == [(3, "resources.nodes")]
    with pytest.raises(SpecError, match=r"job\.sh:2: #SBATCH: cannot read the directive"):
        read_job_text('#!/bin/sh\n#SBATCH --comment="unclosed\nhostname\n', "job.sh")


def test_the_samples_are_recognised():
    assert load_job_file(SAMPLES / "native" / "train.sbatch").native.kind == "sbatch"
    assert load_job_file(SAMPLES / "native" / "job.yaml").native.kind == "kubernetes"
    assert load_job_file(SAMPLES / "native" / "det-mnist" / "const.yaml").kind is JobKind.EXPERIMENT
    assert load_job_file(SAMPLES / "slurm-batch.yaml").native is None


def test_slurm_options_take_a_mapping_or_a_list_with_located_errors():
    spec = parse_spec(
        "name: a\nkind: slurm\ncommand: 'true'\nslurm:\n  options: [mail-type=END, --exclusive, {nice: 5}]\n", "s.yaml"
    )
    assert spec.section("slurm")["options"] == {"mail-type": "END", "exclusive": True, "nice": "5"}
    with pytest.raises(SpecError) as caught:
        parse_spec(
            "name: a\nkind: slurm\ncommand: 'true'\nslurm:\n  options:\n    'bad name': x\n    qos: [1]\n", "s.yaml"
        )
    assert [(p[1], p[2]) for p in caught.value.problems] == [(6, "slurm.options.bad name"), (7, "slurm.options.qos")]
    with pytest.raises(SpecError, match=r"s\.yaml:4: slurm\.options: expected a mapping of options"):
        parse_spec("name: a\nkind: slurm\ncommand: 'true'\nslurm: {options: 3}\n", "s.yaml")


class NativeSpy(Backend):
    kind = "spy"
    capabilities = Capabilities(
        submit=True, job_kinds=frozenset({JobKind.SLURM, JobKind.SINGLE}), native_files=frozenset({"sbatch"})
    )

    def __init__(self, config):
        super().__init__(config)
        self.calls: list[str] = []

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []

    async def _submit(self, spec):
        self.calls.append("submit")
        return "1"

    async def _submit_native(self, spec, tag, retry):
        self.calls.append(f"native {spec.native.kind} {tag}")
        return "2"

    def _render_native(self, spec):
        self.calls.append("render")
        return spec.native.text


async def test_a_native_file_goes_through_the_same_gate_and_to_submit_native():
    spy = NativeSpy(ClusterConfig("c", "spy"))
    spec = read_job_text(SBATCH, "run.sh")
    assert await spy.submit(spec) == "2"
    assert spy.render(spec) == SBATCH
    assert spy.calls == ["native sbatch None", "render"]
    manifest = read_job_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "j.yaml")
    with pytest.raises(BackendError, match=r"does not take Kubernetes manifests \(j\.yaml\); it takes: sbatch scripts"):
        await spy.submit(manifest)
    assert spy.calls == ["native sbatch None", "render"]


async def test_read_only_refuses_a_native_submit_before_any_call():
    spy = NativeSpy(ClusterConfig("c", "spy", read_only=True))
    with pytest.raises(ReadOnlyError, match="read-only: submit refused"):
        await spy.submit(read_job_text(SBATCH, "run.sh"))
    assert spy.calls == []


def test_read_only_cli_refuses_native_files_before_any_backend_call(monkeypatch, tmp_path, capsys):
    from yanflow_tui import cli
    from yanflow_tui.backends import registry

    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - name: c\n    kind: spy\n")
    script = tmp_path / "run.sh"
    script.write_text(SBATCH)
    made: list[NativeSpy] = []

    class Recorded(NativeSpy):
        def __init__(self, cfg):
            super().__init__(cfg)
            made.append(self)

    with registry.registered("spy", Recorded):
        assert cli.main(["--config", str(config), "--read-only", "submit", str(script)]) == 1
    assert "read-only: submit refused" in capsys.readouterr().err
    assert made and all(b.calls == [] for b in made)
