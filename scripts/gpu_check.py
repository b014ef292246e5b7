"""GPU smoke check of the local backend's NVML path, for a machine with NVIDIA GPUs.

    XDG_STATE_HOME=$(mktemp -d) python scripts/gpu_check.py [OUT.json [NODES.svg]]

Reads the GPUs through NVML, runs a 1-GPU job that does real CUDA work (torch, if installed), checks
that the Nodes data shows that GPU allocated to the job while a second 1-GPU job waits pending when
every GPU is taken, that a job asking for more GPUs than exist is refused, and prints a JSON report.
With NODES.svg, it also renders the Nodes screen (needs Textual). Exits non-zero if any check fails.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.backends.local.nvml import NvmlProbe
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobKind, JobSpec, Resources

WORK = (
    "import os, time\n"
    "print('CUDA_VISIBLE_DEVICES=' + os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'), flush=True)\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    time.sleep(8); print('no torch: slept'); raise SystemExit(0)\n"
    "print('torch sees', torch.cuda.device_count(), 'GPU(s):', torch.cuda.get_device_name(0), flush=True)\n"
    "x = torch.randn(8192, 8192, device='cuda')\n"
    "end = time.time() + 20\n"
    "while time.time() < end:\n"
    "    y = x @ x\n"
    "torch.cuda.synchronize(); print('matmul loop done', flush=True)\n"
)


async def wait_state(backend, job_id, states, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = await backend.get_job(job_id)
        if job.state.value in states:
            return job
        await asyncio.sleep(0.25)
    raise AssertionError(f"job {job_id} never reached {states}")


async def nodes_screenshot(path: Path, node) -> bool:
    """Render the real Nodes screen (Textual headless) while the GPU is busy; True if it shows the GPU."""
    from yanflow_tui.app import YanflowApp
    from yanflow_tui.config import Config

    app = YanflowApp(Config(clusters=(ClusterConfig("local", "local", refresh_seconds=1),)))
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.press("2")
        for _ in range(100):
            await pilot.pause(0.1)
            if app.hub.snapshots["local"].nodes:
                break
        await pilot.pause(1.5)
        svg = app.export_screenshot()
    await asyncio.to_thread(path.write_text, svg)
    import html
    import re

    text = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
    return "■" in text and (node.gpu_type or "?") in text and "%" in text


async def main(out: Path | None, ui_out: Path | None = None) -> int:
    report: dict = {"checks": {}}
    checks = report["checks"]
    probe = NvmlProbe()
    readings = probe.read()
    report["nvml_reason"] = probe.reason
    report["gpus"] = [asdict(r) for r in readings or []]
    checks["nvml_reads_gpus"] = bool(readings)
    if not readings:
        print(json.dumps(report, indent=2))
        return 1
    backend = LocalBackend(ClusterConfig("local", "local"))  # the XDG state dir, shared with the UI check
    total = len(readings)
    spec = JobSpec(
        name="gpu-check", kind=JobKind.SINGLE, command=(sys.executable, "-c", WORK), resources=Resources(gpus=1)
    )
    try:
        await backend.submit(replace(spec, resources=Resources(gpus=total + 1)))
        checks["too_many_gpus_refused"] = False
    except BackendError as exc:
        report["too_many_message"] = str(exc)
        checks["too_many_gpus_refused"] = f"asks for {total + 1} GPU(s)" in str(exc)

    # Fill every GPU so one more 1-GPU job must wait.
    holders = [await backend.submit(spec) for _ in range(total)]
    for job_id in holders:
        await wait_state(backend, job_id, {"running"})
    waiter = await backend.submit(replace(spec, name="gpu-check-waiter"))
    pending = await backend.get_job(waiter)
    report["waiter_while_full"] = {"state": pending.state.value, "reason": pending.reason}
    checks["waits_pending_when_full"] = pending.state.value == "pending" and "waiting for 1 GPU" in pending.reason
    node = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the matmul loops show up in NVML's utilisation
        node = (await backend.list_nodes())[0]
        if all((g.utilization or 0) > 0 for g in node.gpus):
            break
        await asyncio.sleep(0.5)
    report["node_while_running"] = asdict(node)
    held = {g.index: g.job_id for g in node.gpus}
    checks["gpus_shown_allocated_to_jobs"] = sorted(held.values()) == sorted(holders)
    if ui_out is not None:
        checks["ui_nodes_screen_shows_gpu"] = await nodes_screenshot(ui_out, node)
    checks["utilisation_reported"] = any((g.utilization or 0) > 0 for g in node.gpus)
    checks["memory_reported"] = all(g.memory_total_mb for g in node.gpus)
    jobs = {j.id: j for j in await backend.list_jobs()}
    checks["distinct_gpus_per_job"] = len({jobs[h].gpu_indices for h in holders}) == total
    for job_id in holders:
        job = await wait_state(backend, job_id, {"completed", "failed"}, timeout=120)
        checks[f"job_{job_id}_completed"] = job.state.value == "completed"
    job = await wait_state(backend, waiter, {"completed", "failed"}, timeout=120)
    checks["waiter_ran_after"] = job.state.value == "completed"
    report["logs"] = {}
    jobs = {j.id: j for j in await backend.list_jobs()}  # the waiter's GPUs are known now
    for job_id in [*holders, waiter]:
        lines = [line.text async for line in backend.stream_logs(job_id)]
        report["logs"][job_id] = lines
        visible = next((x for x in lines if x.startswith("CUDA_VISIBLE_DEVICES=")), "")
        expected = ",".join(map(str, jobs[job_id].gpu_indices)) if job_id in jobs else None
        if expected is not None:
            checks[f"job_{job_id}_cuda_visible_devices"] = visible == f"CUDA_VISIBLE_DEVICES={expected}"
    await backend.close()
    text = json.dumps(report, indent=2, default=str)
    if out:
        await asyncio.to_thread(out.write_text, text)
    print(json.dumps(checks, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]]
    raise SystemExit(asyncio.run(main(*args)))
