"""``scripts/release.py``: a release is cut from the changelog (its Unreleased section becomes the version's,
the package's version follows) and tagged ``vX.Y.Z`` with that section as the tag's message; ``--check``
holds the changelog and the package's version together."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_release():
    spec = importlib.util.spec_from_file_location("release_script", ROOT / "scripts" / "release.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


release = load_release()

CHANGELOG = """# Changelog

## [Unreleased]

### Added

- Resume with one key.

## [0.1.0]

### Added

- The first version.
"""


def test_the_repositorys_changelog_and_version_agree():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    version = release.package_version((ROOT / "pyproject.toml").read_text())
    assert release.problems(changelog, version) == []


def test_problems_are_named():
    assert release.problems(CHANGELOG, "0.0.9") == [
        "pyproject.toml: version 0.0.9 is older than the changelog's newest, 0.1.0"
    ]
    swapped = CHANGELOG.replace("## [0.1.0]", "## [0.1.0]\n\n## [0.2.0]")
    assert "CHANGELOG.md: released versions are not newest first" in release.problems(swapped, "0.2.0")
    assert "not a version" in release.problems(CHANGELOG.replace("[0.1.0]", "[one]"), "0.1.0")[0]


def test_cut_releases_the_unreleased_section():
    text, message = release.cut(CHANGELOG, "0.2.0", "2026-12-06")
    assert "## [Unreleased]\n\n## [0.2.0] - 2026-12-06\n\n### Added\n\n- Resume with one key." in text
    assert message == "### Added\n\n- Resume with one key."
    assert release.versions(text) == [("Unreleased", None), ("0.2.0", "2026-12-06"), ("0.1.0", None)]
    with pytest.raises(ValueError, match="not newer"):
        release.cut(CHANGELOG, "0.1.0", "2026-12-06")
    with pytest.raises(ValueError, match="missing or empty"):
        release.cut(text, "0.3.0", "2026-12-07")


def test_a_release_commits_and_tags(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "CHANGELOG.md").write_text(CHANGELOG)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.1.0"\n')

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.org")
    monkeypatch.setattr(release, "ROOT", repo)
    monkeypatch.setattr(sys, "argv", ["release.py", "0.2.0", "--date", "2026-12-06"])
    assert release.main() == 0
    assert 'version = "0.2.0"' in (repo / "pyproject.toml").read_text()
    assert "## [0.2.0] - 2026-12-06" in (repo / "CHANGELOG.md").read_text()
    assert git("tag", "--list") == "v0.2.0\n"
    assert "- Resume with one key." in git("tag", "-n20", "v0.2.0")
    assert git("rev-list", "-n1", "v0.2.0") == git("rev-parse", "HEAD")
    monkeypatch.setattr(sys, "argv", ["release.py", "0.3.0"])
    assert release.main() == 2  # nothing unreleased to release
