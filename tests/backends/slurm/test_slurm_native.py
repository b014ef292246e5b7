"""sbatch scripts submitted as they are, on the real loopback cluster: every directive applied (those
we model and those we do not), the body run unchanged; ``slurm.options`` passed through."""

from __future__ import annotations

import re
import uuid

import pytest
from slurmhelpers import DIR, JOBS, slurm
from waiting import wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm.script import options
from yanflow_tui.errors import SpecError
from yanflow_tui.spec import parse_spec

CONFIG = str(DIR / "yanflow.yaml")
BODY = """echo "body: task $SLURM_ARRAY_TASK_ID of $SLURM_JOB_NUM_NODES nodes"
printf '%s|%s\\n' 'two  spaces' "$HOME" > /dev/null
printf '%s\\n' 'kept  as  written' "quote's \\"fine\\""
"""


def script(name: str) -> str:
    return f"""#!/bin/sh
#SBATCH --job-name={name}
#SBATCH --nodes=2
#SBATCH --gres=gpu:a100:1
#SBATCH --array=0-1
#SBATCH -p gpu -t 00:05:00
#SBATCH --mail-type=END
#SBATCH --comment="kept from the script"
#SBATCH --output={JOBS}/%x-%A_%a.out
#SBATCH --mem=100M --cpus-per-task=1
{BODY}"""


def fields(record: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S*)", record))


def test_an_sbatch_script_is_submitted_as_written_and_its_body_runs_unchanged(slurm_dir, slurm_jobs, tmp_path, capsys):
    name = f"yf-native-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "train.sbatch"
    path.write_text(script(name))
    assert cli.main(["--config", CONFIG, "submit", str(path)]) == 0
    job_id = slurm_jobs.add(capsys.readouterr().out.strip())
    assert job_id.isdigit()
    records = [fields(line) for line in slurm("scontrol", "show", "job", "-o", job_id).splitlines() if line]
    assert records, "scontrol shows the job"
    for record in records:  # the array's tasks (or its one pending record): each directive applied
        assert record["JobName"] == name
        assert record["ArrayJobId"] == job_id
        assert record["NumNodes"].split("-")[0] == "2"
        assert record["TresPerNode"] == "gres:gpu:a100:1"
        assert record["Partition"] == "gpu" and record["TimeLimit"] == "00:05:00"
        assert record["MailType"] == "END"  # a directive we do not model
        assert record["MinMemoryNode"] == "100M"
    text = slurm("scontrol", "show", "job", job_id)
    assert "Comment=kept from the script" in text  # the script's own comment, not our tag
    outputs = [JOBS / f"{name}-{job_id}_{task}.out" for task in (0, 1)]

    def done() -> bool:
        return (
            all(p.is_file() and p.read_text().count("\n") >= 3 for p in outputs)
            and not slurm("squeue", "-h", "-j", job_id, check=False).strip()
        )

    wait_until(done, 120, "both array tasks ran")
    for task, out in enumerate(outputs):
        assert out.read_text() == f'body: task {task} of 2 nodes\nkept  as  written\nquote\'s "fine"\n'


def test_the_form_s_changes_go_as_sbatch_options_and_the_tag_is_added(slurm_dir, slurm_jobs, tmp_path, capsys):
    name = f"yf-native-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "job.sh"
    path.write_text(f"#!/bin/sh\n#SBATCH --job-name={name}\n#SBATCH -p cpu --mem=50M\n#SBATCH -o /dev/null\nsleep 60\n")
    assert cli.main(["--config", CONFIG, "submit", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "# sbatch --parsable --comment=yanflow:DRY-RUN < script"  # only the tag
    assert out.split("\n", 1)[1] == path.read_text()
    assert cli.main(["--config", CONFIG, "submit", str(path)]) == 0
    job_id = slurm_jobs.add(capsys.readouterr().out.strip())
    record = fields(slurm("scontrol", "show", "job", "-o", job_id))
    assert record["JobName"] == name and record["Partition"] == "cpu"
    assert record["Comment"].startswith("yanflow:")  # found again by its tag if the answer is lost


def test_slurm_options_pass_through_to_sbatch(slurm_dir, slurm_jobs, tmp_path, capsys):
    name = f"yf-opts-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "opts.yaml"
    path.write_text(
        f"name: {name}\nkind: slurm\ncommand: sleep 60\nresources: {{cpus: 1, memory: 50M}}\n"
        "slurm:\n  partition: cpu\n  output: /dev/null\n  options:\n"
        '    mail-type: "BEGIN,END"\n    begin: now+1hour\n    hold: true\n    nice: "5"\n'
    )
    assert cli.main(["--config", CONFIG, "submit", str(path), "--dry-run"]) == 0
    preview = capsys.readouterr().out
    assert "#SBATCH --mail-type=BEGIN,END" in preview and "#SBATCH --hold" in preview
    assert cli.main(["--config", CONFIG, "submit", str(path)]) == 0
    job_id = slurm_jobs.add(capsys.readouterr().out.strip())
    record = fields(slurm("scontrol", "show", "job", "-o", job_id))
    assert record["MailType"] == "BEGIN,END" and record["Nice"] == "5"
    assert record["Reason"] == "JobHeldUser" and record["JobState"] == "PENDING"


def test_an_option_that_is_also_a_field_is_refused_with_its_path():
    spec = parse_spec(
        "name: x\nkind: slurm\ncommand: 'true'\nslurm: {partition: cpu, options: {partition: gpu}}\n", "x.yaml"
    )
    with pytest.raises(SpecError, match=r"slurm\.options\.partition: --partition is already set"):
        options(spec)
    with pytest.raises(SpecError, match=r"slurm\.options\.comment: --comment is set by yanflow-tui"):
        options(parse_spec("name: x\nkind: slurm\ncommand: 'true'\nslurm: {options: [comment=hi]}\n", "x.yaml"))
