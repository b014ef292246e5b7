"""sbatch rendering: a job spec as (sbatch argv, batch script). Options go on ``#SBATCH`` lines only
when their value is plainly safe there; anything else (quotes, spaces, ``$``, newlines, a leading
``-``...) is passed as an sbatch argument instead. No I/O."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from yanflow_tui.errors import SpecError
from yanflow_tui.yamldoc import ENV_KEY
from yanflow_tui.model import JobKind, JobSpec

SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:/@+,=%\[\]-]+")


@dataclass(frozen=True)
class Rendered:
    argv: tuple[str, ...]  # sbatch and its arguments (the script comes on stdin)
    script: str
    tag: str

    def text(self) -> str:
        """What --dry-run prints: the command line, then the script."""
        return f"# {shlex.join(self.argv)} < script\n{self.script}"


def _safe(value: str) -> bool:
    return bool(SAFE_VALUE.fullmatch(value)) and not value.startswith("-")


def _mem(mb: int) -> str:
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


def render(spec: JobSpec, tag: str, defaults: dict | None = None) -> Rendered:
    """``tag`` goes into ``--comment=yanflow:<tag>`` so a timed-out submit can be found again.
    Any name Slurm takes is passed through unchanged (a newline too: sbatch stores it as given)."""
    defaults = defaults or {}
    s = spec.slurm
    res = spec.resources
    options: list[tuple[str, str | None]] = [("job-name", spec.name), ("nodes", str(res.nodes))]
    partition = s.get("partition") or defaults.get("partition")
    account = s.get("account") or defaults.get("account")
    for key, value in (("partition", partition), ("account", account), ("qos", s.get("qos")),
                       ("time", s.get("time")), ("array", s.get("array")), ("constraint", s.get("constraint"))):
        if value:
            options.append((key, str(value)))
    if res.gpus:
        gpu_type = s.get("gpu_type")
        options.append(("gres", f"gpu:{gpu_type}:{res.gpus}" if gpu_type else f"gpu:{res.gpus}"))
    if res.nodes > 1 or spec.kind is JobKind.MULTI_NODE:
        options.append(("ntasks-per-node", "1"))
    if res.cpus:
        options.append(("cpus-per-task", str(res.cpus)))
    if res.memory_mb:
        options.append(("mem", _mem(res.memory_mb)))
    if s.get("output"):
        options.append(("output", str(s["output"])))
    if s.get("error"):
        options.append(("error", str(s["error"])))
    if spec.workdir:
        options.append(("chdir", spec.workdir))
    if s.get("exclusive"):
        options.append(("exclusive", None))
    options.append(("comment", f"yanflow:{tag}"))

    argv = ["sbatch", "--parsable"]
    lines = ["#!/bin/sh"]
    for key, value in options:
        if value is None:
            lines.append(f"#SBATCH --{key}")
        elif _safe(value):
            lines.append(f"#SBATCH --{key}={value}")
        else:
            argv.append(f"--{key}={value}")
    for key, value in spec.env.items():
        if not ENV_KEY.fullmatch(key):
            raise SpecError([(spec.source or "<spec>", 0, f"env.{key}", "not a valid environment variable name")])
        lines.append(f"export {key}={shlex.quote(value)}")
    command = spec.command if isinstance(spec.command, str) else shlex.join(spec.command)
    if spec.kind is JobKind.MULTI_NODE and spec.launcher != "none":
        command = _launcher(spec, command)
    lines.append(command)
    return Rendered(tuple(argv), "\n".join(lines) + "\n", tag)


def _launcher(spec: JobSpec, command: str) -> str:
    """Multi-node: one task per node under srun, with the rendezvous taken from the allocation."""
    gpus = max(1, spec.resources.gpus)
    head = 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1); export MASTER_ADDR'
    if spec.launcher == "torchrun":
        run = (f"srun torchrun --nnodes=$SLURM_NNODES --nproc-per-node={gpus} "
               f"--rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29500 ")
    elif spec.launcher == "accelerate":
        run = (f"srun accelerate launch --num_machines=$SLURM_NNODES --num_processes=$(( SLURM_NNODES * {gpus} )) "
               f"--machine_rank=$SLURM_NODEID --main_process_ip=$MASTER_ADDR --main_process_port=29500 ")
    else:  # deepspeed
        run = "srun deepspeed --master_addr=$MASTER_ADDR --master_port=29500 "
    words = spec.command if isinstance(spec.command, tuple) else tuple(shlex.split(spec.command))
    return f"{head}\n{run}{shlex.join(words)}"
