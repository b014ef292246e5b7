"""Stub launchers that run the job: ``torchrun``, ``deepspeed``, ``accelerate`` and ``horovodrun``
scripts that read the options the console hands each (``yanflow_tui.launchers``) and start the
user's script once per process, with the environment the real launcher gives it (torchrun's RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR...; deepspeed's ``--local_rank``; horovodrun's HOROVOD_RANK...).
No framework needed: the template projects fall back to a pure-Python loop. (The recording stubs of
tests/backends/test_launchers.py check the options; these check that a project runs under them.)"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

COMMON = r'''
import os, subprocess, sys

def options(argv):
    """--key=value / --flag options up to the first other word; the words from there."""
    opts = {}
    for i, word in enumerate(argv):
        if not word.startswith("--"):
            return opts, argv[i:]
        key, _, value = word[2:].partition("=")
        opts[key] = value
    return opts, []

def python(words):
    return [sys.executable, "-m", words[1], *words[2:]] if words[0] in ("-m", "--module") else [sys.executable, *words]

def start(argvs_envs):
    procs = [subprocess.Popen(argv, env={**os.environ, **env}) for argv, env in argvs_envs]
    sys.exit(max(p.wait() for p in procs))
'''

STUBS = {
    "torchrun": r"""
opts, words = options(sys.argv[1:])
nnodes, node, nproc = int(opts["nnodes"]), int(opts["node_rank"]), int(opts["nproc_per_node"])
base = {"WORLD_SIZE": str(nnodes * nproc), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node),
        "MASTER_ADDR": opts["master_addr"], "MASTER_PORT": opts["master_port"]}
start([(python(words), {**base, "RANK": str(node * nproc + i), "LOCAL_RANK": str(i)}) for i in range(nproc)])
""",
    "deepspeed": r"""
opts, words = options(sys.argv[1:])
assert "no_ssh" in opts, opts
nnodes, node, nproc = int(opts["num_nodes"]), int(opts["node_rank"]), int(opts["num_gpus"])
base = {"WORLD_SIZE": str(nnodes * nproc), "MASTER_ADDR": opts["master_addr"], "MASTER_PORT": opts["master_port"]}
runs = []
for i in range(nproc):
    argv = python(words)
    argv.insert(3 if words[0] in ("-m", "--module") else 2, f"--local_rank={i}")
    runs.append((argv, {**base, "RANK": str(node * nproc + i), "LOCAL_RANK": str(i)}))
start(runs)
""",
    "accelerate": r"""
assert sys.argv[1] == "launch", sys.argv
opts, words = options(sys.argv[2:])
nnodes, node, total = int(opts["num_machines"]), int(opts["machine_rank"]), int(opts["num_processes"])
nproc = total // nnodes
base = {"WORLD_SIZE": str(total), "MASTER_ADDR": opts["main_process_ip"], "MASTER_PORT": opts["main_process_port"]}
start([(python(words), {**base, "RANK": str(node * nproc + i), "LOCAL_RANK": str(i)}) for i in range(nproc)])
""",
    "horovodrun": r"""
args = sys.argv[1:]
assert args[0] == "-np" and args[2] == "-H", args
size, hosts, command = int(args[1]), args[3].split(","), args[4:]
slots = [(h.split(":")[0], int(h.split(":")[1])) for h in hosts]
assert sum(n for _, n in slots) == size, (slots, size)
runs, rank = [], 0
for host, n in slots:
    for local in range(n):
        env = {"HOROVOD_RANK": str(rank), "HOROVOD_SIZE": str(size), "HOROVOD_LOCAL_RANK": str(local),
               "HOROVOD_LOCAL_SIZE": str(n), "HOROVOD_HOSTNAME": host}
        runs.append(([sys.executable if command[0].startswith("python") else command[0], *command[1:]], env))
        rank += 1
start(runs)
""",
}


def make_launchers(bin_dir: Path) -> Path:
    """The stub launchers in ``bin_dir`` (created), to put first on a job's PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in STUBS.items():
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\n{COMMON}\n{body}")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir
