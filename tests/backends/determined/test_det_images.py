"""The images catalogue on Determined: the cluster's ``images:`` first, then the master's default
images (``task_container_defaults.image`` of its config, and each resource pool's), read once through
the SDK bindings from the fake master; a master that refuses its config offers none; a job's image
comes from its experiment config's ``environment.image``."""

from __future__ import annotations

from dataclasses import replace

from det_master import DEFAULT_CPU, DEFAULT_CUDA, DEFAULT_ROCM
from dethelpers import cache_token, make_backend, seed

from yanflow_tui.model import Image


def config_reads(master) -> int:
    return sum(1 for r in master.requests if r.path == "/api/v1/master/config")


async def test_the_master_default_images_follow_the_config_catalogue_and_are_read_once(master):
    cache_token(master)
    seed(master)
    mine = Image("registry.example/ml/pytorch:2.4", "our build", ("pytorch",))
    backend = make_backend(master)
    backend.config = replace(backend.config, images=(mine,))
    assert backend.images() == (mine,)  # nothing read yet: the config's alone, no I/O
    await backend.list_nodes()
    names = [i.name for i in backend.images()]
    assert names == [mine.name, DEFAULT_CUDA, DEFAULT_CPU, DEFAULT_ROCM, "determinedai/pytorch-ngc:0.38.1"]
    defaults = backend.images()[1:]
    assert all(i.source == "master default" for i in defaults)
    assert "GPU" in defaults[0].description and "pool a100" in defaults[-1].description
    await backend.list_nodes()
    assert config_reads(master) == 1


async def test_a_master_that_refuses_its_config_offers_no_defaults_and_is_not_asked_again(master):
    cache_token(master)
    seed(master)
    master.master_config = None  # 403, as for a user without the permission
    backend = make_backend(master)
    assert await backend.list_nodes()  # the nodes still come
    assert backend.images() == ()
    await backend.list_nodes()
    assert config_reads(master) == 1


async def test_an_experiment_and_its_trials_show_the_image_of_its_config(master):
    cache_token(master)
    image = {"cpu": DEFAULT_CPU, "cuda": "nvcr.io/nvidia/pytorch:24.05-py3"}
    config = {
        "name": "imgexp",
        "searcher": {"name": "single", "metric": "loss"},
        "resources": {"slots_per_trial": 1},
        "entrypoint": "python3 train.py",
        "environment": {"image": image},
    }
    master.add_experiment(21, "imgexp", "alice", ntrials=1, config=config)
    backend = make_backend(master)
    jobs = {j.id: j for j in await backend.list_jobs()}
    expected = f"cuda: nvcr.io/nvidia/pytorch:24.05-py3, cpu: {DEFAULT_CPU}"
    assert jobs["exp-21"].image == expected
    assert jobs["trial-210"].image == expected
