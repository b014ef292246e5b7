"""The four kinds of cluster the terminal benchmark's idle run configures (issue #32, point 4): this
machine (``local``), the loopback Slurm test cluster over SSH (``scripts/slurm-cluster``, its
``yanflow.yaml``), and the Kubernetes API emulator and fake Determined master from ``tests/fakes``,
started here in threads of the benchmark (not of the console measured), each seeded with a few jobs.
``FourKinds`` starts them, writes a config naming all four, and stops them on exit."""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType

import yaml

TESTS = Path(__file__).resolve().parent.parent / "tests"
SLURM_CONFIG = Path("/tmp/yanflow-slurm/yanflow.yaml")  # written by scripts/slurm-cluster up
DET_USER = "alice"


class FourKinds:
    """``with FourKinds(home) as kinds``: ``kinds.config`` names the four clusters, ``kinds.env`` holds
    what the console needs besides (the Determined user and token)."""

    def __init__(self, home: Path, slurm_config: Path = SLURM_CONFIG, slurm_transport: str = "") -> None:
        self.home = home
        self.slurm_config = slurm_config
        self.slurm_transport = slurm_transport  # "openssh": the system ssh instead of asyncssh (in the console)
        self.config = home / "four-kinds.yaml"
        self.env: dict[str, str] = {}
        self._stops: list = []

    def __enter__(self) -> FourKinds:
        for path in (TESTS, TESTS / "fakes"):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        try:
            slurm = self._slurm()
            kube = self._kubernetes()
            det = self._determined()
        except BaseException:
            self._stop()
            raise
        clusters = [{"name": "local", "kind": "local"}, slurm, kube, det]
        self.config.write_text(yaml.safe_dump({"clusters": clusters}, sort_keys=False))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        while self._stops:
            self._stops.pop()()

    def _slurm(self) -> dict:
        if not self.slurm_config.is_file():
            raise SystemExit(f"no Slurm test cluster: {self.slurm_config} is missing (scripts/slurm-cluster up)")
        slurm = dict(yaml.safe_load(self.slurm_config.read_text())["clusters"][0])
        if self.slurm_transport:
            slurm["ssh"] = {**slurm["ssh"], "transport": self.slurm_transport}
        return slurm

    def _kubernetes(self) -> dict:
        from fakes.k8s_api import K8sEmulator, make_job
        from k8shelpers import write_kubeconfig

        emulator = K8sEmulator().start()
        self._stops.append(emulator.shutdown)
        for node in ("gpu-a", "gpu-b"):
            emulator.add_node(node, gpus=8)
        for i, parallelism in enumerate((1, 4, 2)):
            name = f"train-{i}"
            emulator.put("jobs", make_job(name, "ml", parallelism=parallelism, indexed=parallelism > 1))
            emulator.run_job_pods("ml", name, ["gpu-a", "gpu-b"])
        kubeconfig = write_kubeconfig(self.home / "kubeconfig", emulator.url)
        return {"name": "kube", "kind": "kubernetes", "kubeconfig": str(kubeconfig)}

    def _determined(self) -> dict:
        from det_master import FakeMaster
        from dethelpers import PASSWORD, seed

        master = FakeMaster(users={DET_USER: PASSWORD, "bob": "bobpw"}).start()
        self._stops.append(master.stop)
        seed(master)
        self.env = {"DET_USER": DET_USER, "DET_USER_TOKEN": master.token_for(DET_USER)}
        return {"name": "det", "kind": "determined", "master": master.url}
