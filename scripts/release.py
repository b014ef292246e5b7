"""Cut a release from the changelog: ``python scripts/release.py VERSION [--date YYYY-MM-DD] [--dry-run]``.

``CHANGELOG.md``'s ``## [Unreleased]`` section becomes ``## [VERSION] - DATE`` (a new, empty Unreleased above
it), ``pyproject.toml``'s version becomes VERSION, both are committed, and the annotated tag ``vVERSION`` is
made on that commit with the section's text as its message (``git push --follow-tags`` publishes both).
``--check`` only checks that the package's version is the newest released one in the changelog (or newer),
and that every released heading is well formed; ``scripts/dist-check`` runs it. Refuses a version that is
not newer than the last one, an empty Unreleased section, a dirty tree and a tag that exists.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", re.M)
SEMVER = re.compile(r"\d+\.\d+\.\d+")


def versions(changelog: str) -> list[tuple[str, str | None]]:
    """(version, date) of each heading, newest first; ``Unreleased`` included."""
    return [(m["version"], m["date"]) for m in HEADING.finditer(changelog)]


def key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def problems(changelog: str, package_version: str) -> list[str]:
    """What is wrong between the changelog's headings and the package's version (empty: nothing)."""
    found = versions(changelog)
    out = []
    released = [(v, d) for v, d in found if v != "Unreleased"]
    for version, _date in released:
        if not SEMVER.fullmatch(version):
            out.append(f"CHANGELOG.md: heading [{version}] is not a version MAJOR.MINOR.PATCH")
    ordered = [v for v, _ in released if SEMVER.fullmatch(v)]
    if ordered != sorted(ordered, key=key, reverse=True):
        out.append("CHANGELOG.md: released versions are not newest first")
    if ordered and SEMVER.fullmatch(package_version) and key(package_version) < key(ordered[0]):
        out.append(f"pyproject.toml: version {package_version} is older than the changelog's newest, {ordered[0]}")
    if found and found[0][0] != "Unreleased":
        out.append("CHANGELOG.md: the first section is not [Unreleased]")
    return out


def cut(changelog: str, version: str, date: str) -> tuple[str, str]:
    """The changelog with Unreleased released as ``version``, and that section's text (the tag's message)."""
    found = versions(changelog)
    if not SEMVER.fullmatch(version):
        raise ValueError(f"{version!r} is not a version MAJOR.MINOR.PATCH")
    released = [v for v, _ in found if v != "Unreleased" and SEMVER.fullmatch(v)]
    if released and key(version) <= key(released[0]):
        raise ValueError(f"{version} is not newer than the last release, {released[0]}")
    match = re.search(r"^## \[Unreleased\]\s*\n(?P<body>.*?)(?=^## \[|\Z)", changelog, re.M | re.S)
    if match is None or not match["body"].strip():
        raise ValueError("CHANGELOG.md: the [Unreleased] section is missing or empty")
    head = f"## [Unreleased]\n\n## [{version}] - {date}\n"
    return changelog[: match.start()] + head + changelog[match.start() + len("## [Unreleased]\n") :], match[
        "body"
    ].strip()


def set_version(pyproject: str, version: str) -> str:
    new, count = re.subn(r'(?m)^version = "[^"]*"$', f'version = "{version}"', pyproject, count=1)
    if count != 1:
        raise ValueError('pyproject.toml: no line `version = "..."`')
    return new


def package_version(pyproject: str) -> str:
    match = re.search(r'(?m)^version = "([^"]*)"$', pyproject)
    return match[1] if match else ""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", nargs="?")
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    parser.add_argument("--check", action="store_true", help="only check the changelog against the version")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args()
    changelog_path, pyproject_path = ROOT / "CHANGELOG.md", ROOT / "pyproject.toml"
    changelog, pyproject = changelog_path.read_text(), pyproject_path.read_text()
    if args.check:
        found = problems(changelog, package_version(pyproject))
        for problem in found:
            print(problem, file=sys.stderr)
        return 1 if found else 0
    if not args.version:
        parser.error("give the VERSION to release (or --check)")
    try:
        released, message = cut(changelog, args.version, args.date)
        bumped = set_version(pyproject, args.version)
    except ValueError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 2
    tag = f"v{args.version}"
    if args.dry_run:
        print(f"would release {args.version} ({args.date}) and tag {tag}:\n\n{message}")
        return 0
    if git("status", "--porcelain", "--untracked-files=no").strip():
        print("release: the tree has uncommitted changes", file=sys.stderr)
        return 2
    if git("tag", "--list", tag).strip():
        print(f"release: tag {tag} exists", file=sys.stderr)
        return 2
    changelog_path.write_text(released)
    pyproject_path.write_text(bumped)
    git("commit", "-q", "-m", f"Release {args.version}", "--", "CHANGELOG.md", "pyproject.toml")
    git("tag", "-a", tag, "-m", f"YanFlow TUI {args.version}\n\n{message}")
    print(f"released {args.version}: commit {git('rev-parse', '--short', 'HEAD').strip()}, tag {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
