"""The job detail's "Why" block: for a held job on the real Slurm cluster it says why, with the key
that releases it; a backend without ``capabilities.explain`` (the fake) shows no Why block at all."""

from __future__ import annotations

from slurmhelpers import slurm, ssh_cluster
from textual.widgets import Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen


def why(screen) -> str:
    return "".join(str(w.render()) for w in screen.query("#why").results(Static))


async def test_the_why_block_of_a_held_job_names_the_release_key(slurm_dir, slurm_jobs, home):
    out = slurm("sbatch", "--parsable", "-J", "explain-why", "-p", "cpu", "--hold", "-o", "/dev/null", "--wrap=true")
    job_id = slurm_jobs.add(out.strip().split(";")[0])
    app = make_app(ssh_cluster())
    async with app.run_test(size=(160, 50)) as pilot:
        name = app.hub.names[0]
        job = await wait_for(pilot, lambda: app.hub.find_job(name, job_id), timeout=30, what="the held job")
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        text = await wait_for(pilot, lambda: "press L" in why(detail) and why(detail), timeout=30, what="the Why block")
        assert text.startswith("Why (held)") and "Its user held it." in text
        assert detail.query_one("#why").display


async def test_no_why_block_where_the_backend_cannot_explain(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "102"), what="job 102")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "102")))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: detail.is_mounted, what="mounted")
        assert not detail.query_one("#why").display
