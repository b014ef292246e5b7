"""``yanflow_tui.inside``: where a download lands, and the console's port-forwards closed by job and at exit."""

from __future__ import annotations

from yanflow_tui.backends.base import Forward
from yanflow_tui.inside import Forwards, download_target


def test_a_download_goes_here_under_its_name_into_a_folder_given_or_to_the_path_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert download_target("/work/out/model.pt") == tmp_path / "model.pt"
    assert download_target("/work/ckpt/") == tmp_path / "ckpt"
    assert download_target("../odd name;rm") == tmp_path / "odd_name_rm"
    (tmp_path / "dl").mkdir()
    assert download_target("model.pt", str(tmp_path / "dl")) == tmp_path / "dl" / "model.pt"
    assert download_target("model.pt", str(tmp_path / "w.pt")) == tmp_path / "w.pt"


async def test_forwards_close_by_job_and_all_at_exit():
    closed: list[int] = []

    def forward(port: int) -> Forward:
        async def close() -> None:
            closed.append(port)

        return Forward("pod ml/p", port, 40000 + port, close)

    forwards = Forwards()
    forwards.add("k8s/a", forward(1))
    forwards.add("k8s/a", forward(2))
    forwards.add("k8s/b", forward(3))
    assert [f.address for f in forwards.of("k8s/a")] == ["127.0.0.1:40001", "127.0.0.1:40002"]
    assert await forwards.close("k8s/a") == 2 and closed == [1, 2] and forwards.of("k8s/a") == []
    await forwards.close_all()
    assert closed == [1, 2, 3] and forwards.open == {}
