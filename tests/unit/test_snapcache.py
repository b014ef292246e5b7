"""The snapshot kept between runs (``snapcache``): a private file, no secrets, read back exactly, and
ignored with a note when corrupt or from another version."""

from __future__ import annotations

import json
import stat

from fakes.backend import FakeBackend

from yanflow_tui import __version__, snapcache
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import ClusterSnapshot, Health, Hub

SECRET = "s3cr3t-t0ken-value"


def cluster(name="hpc", **options) -> ClusterConfig:
    return ClusterConfig(name, "fake", options=options)


def good(name="hpc") -> ClusterSnapshot:
    fake = FakeBackend(cluster(name))
    return ClusterSnapshot(name, "fake", False, Health.OK, "", 1_795_954_200.0, tuple(fake.jobs), tuple(fake.nodes))


def test_the_file_is_0600_and_reads_back_the_same_jobs_and_nodes(tmp_path):
    path = tmp_path / "state" / "snapshot.json"
    snap = good()
    snapcache.save(path, [snap, ClusterSnapshot("never", "fake", False)], 1.0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cached, note = snapcache.load(path)
    assert note == ""
    assert set(cached) == {"hpc"}  # a cluster that never answered is not kept
    assert cached["hpc"].jobs == snap.jobs
    assert cached["hpc"].nodes == snap.nodes
    assert cached["hpc"].updated == snap.updated


def test_no_token_password_or_key_from_the_config_reaches_the_file(fake_backend, tmp_path):
    secret_file = tmp_path / "password"
    secret_file.write_text(SECRET)
    config = Config(
        clusters=(cluster(token=SECRET, password=SECRET, password_file=str(secret_file), identity_file="/k/id_secret"),)
    )
    hub = Hub(config)
    hub.snapshots["hpc"] = good()
    path = tmp_path / "snapshot.json"
    snapcache.keep(hub, path, 2.0)
    text = path.read_text()
    assert "Resources" in text  # the file was written with the jobs
    for secret in (SECRET, str(secret_file), "id_secret", "password", "token"):
        assert secret not in text


def test_a_corrupt_file_is_ignored_with_a_one_line_note(tmp_path):
    path = tmp_path / "snapshot.json"
    for data in (
        b"{not json",
        b"[]",
        json.dumps({"format": 1, "yanflow": __version__, "clusters": {"x": {}}}).encode(),
    ):
        path.write_bytes(data)
        cached, note = snapcache.load(path)
        assert cached == {}
        assert note.startswith("cached snapshot ignored") and "\n" not in note


def test_a_record_with_a_field_missing_or_one_too_many_is_corrupt(tmp_path):
    path = tmp_path / "snapshot.json"
    snapcache.save(path, [good()], 1.0)
    doc = json.loads(path.read_bytes())
    for kind, change in (("jobs", "extra"), ("jobs", "missing"), ("nodes", "extra"), ("nodes", "missing")):
        broken = json.loads(json.dumps(doc))
        record = broken["clusters"]["hpc"][kind][0]
        if change == "extra":
            record["surprise"] = 1
        else:
            del record["name"]
        path.write_bytes(json.dumps(broken).encode())
        cached, note = snapcache.load(path)
        assert cached == {}, (kind, change)
        assert note.startswith("cached snapshot ignored: corrupt")


def test_equal_times_are_read_once_and_shared(tmp_path):
    path = tmp_path / "snapshot.json"
    snap = good()
    snapcache.save(path, [snap], 1.0)
    jobs = snapcache.load(path)[0]["hpc"].jobs
    times = [job.submit_time for job in jobs if job.submit_time is not None]
    assert len(times) > 1 and len({id(t) for t in times}) == len(set(times))
    assert jobs == snap.jobs


def test_a_file_from_another_version_is_ignored_with_a_note(tmp_path):
    path = tmp_path / "snapshot.json"
    snapcache.save(path, [good()], 1.0)
    doc = json.loads(path.read_text())
    doc["yanflow"] = "0.0.1-old"
    path.write_text(json.dumps(doc))
    cached, note = snapcache.load(path)
    assert cached == {}
    assert "0.0.1-old" in note and "\n" not in note
    doc["yanflow"], doc["format"] = __version__, snapcache.FORMAT + 1
    path.write_text(json.dumps(doc))
    assert snapcache.load(path)[0] == {}


def test_no_file_yet_is_no_note(tmp_path):
    assert snapcache.load(tmp_path / "missing.json") == ({}, "")


def test_a_symlink_is_not_followed(tmp_path):
    real = tmp_path / "real.json"
    snapcache.save(real, [good()], 1.0)
    link = tmp_path / "snapshot.json"
    link.symlink_to(real)
    cached, note = snapcache.load(link)
    assert cached == {} and note


def test_seed_marks_cached_and_skips_removed_or_changed_clusters(fake_backend, tmp_path):
    path = tmp_path / "snapshot.json"
    other_kind = ClusterSnapshot("moved", "slurm", False, Health.OK, "", 5.0)
    snapcache.save(path, [good("hpc"), good("removed"), other_kind], 1.0)
    hub = Hub(Config(clusters=(cluster("hpc"), cluster("moved"))))
    assert snapcache.restore(hub, path) == ""
    assert set(hub.snapshots) == {"hpc", "moved"}
    hpc = hub.snapshots["hpc"]
    assert hpc.cached and hpc.health is Health.CONNECTING and len(hpc.jobs) == 3
    assert not hub.snapshots["moved"].cached and hub.snapshots["moved"].jobs == ()
