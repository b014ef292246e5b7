"""The JSON Schemas as an editor sees them: the REAL YAML language server (``tests/yamlls.py``; installed from
the npm registry by ``scripts/outside-tools-setup``) opens every sample and template project spec and finds its
schema from the file's own ``$schema`` line, offline, with no problem to show; it names a wrong type and an
unknown key; it offers the spec's keys and choices; a project ``yanflow-tui init`` writes points at this
install's schema; the config is checked through a modeline or the editor's ``yaml.schemas`` setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import ROOT, SAMPLES
from yamlls import LanguageServer, language_server

from yanflow_tui import fileschemas, projects


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("yamlls") / "server.log"
    with language_server(ROOT, log) as started:
        yield started


def spec_files() -> list[Path]:
    found = sorted(SAMPLES.glob("*.yaml")) + sorted(SAMPLES.glob("projects/*/job.yaml"))
    assert len(found) >= 14
    return found


def problems(server: LanguageServer, path: Path, text: str | None = None) -> list[tuple[int, str, str]]:
    """(line, the text it marks, message) of each diagnostic the server publishes for ``path``."""
    return marked(server, server.open(path, text), path.read_text(encoding="utf-8") if text is None else text)


def marked(server: LanguageServer, uri: str, text: str) -> list[tuple[int, str, str]]:
    lines = text.splitlines()
    out = []
    for found in server.diagnostics(uri):
        start, end = found["range"]["start"], found["range"]["end"]
        line = lines[start["line"]] if start["line"] < len(lines) else ""
        shown = line[start["character"] : end["character"]] if end["line"] == start["line"] else line
        out.append((start["line"], shown, found["message"]))
    return out


UNKNOWN = "not_a_key: 1\n"


@pytest.fixture(scope="module")
def opened(server):
    """Every spec file as it is, and as an unsaved buffer beside it with one unknown key at its end (its
    relative $schema resolves as for the file): all opened at once, so the server checks them together."""
    texts = {}
    for path in spec_files():
        texts[path] = path.read_text(encoding="utf-8")
        texts[path.with_name(f"unsaved-{path.name}")] = texts[path] + UNKNOWN
    uris = {path: server.open(path, text) for path, text in texts.items()}
    return {path: marked(server, uris[path], text) for path, text in texts.items()}


@pytest.mark.parametrize("path", spec_files(), ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_every_sample_and_template_finds_its_schema_and_shows_no_problem(opened, path):
    assert opened[path] == []  # a $schema line the server cannot load is a problem shown
    # The schema is applied (not merely absent): the unknown key is marked.
    last = len((path.read_text(encoding="utf-8") + UNKNOWN).splitlines()) - 1
    assert opened[path.with_name(f"unsaved-{path.name}")] == [(last, "not_a_key", "Property not_a_key is not allowed.")]


def test_a_project_written_by_init_points_at_this_installs_schema(server, tmp_path):
    spec = projects.write_project("torchrun-ddp", tmp_path / "mine")
    first = spec.read_text(encoding="utf-8").splitlines()[0]
    assert first == f"# yaml-language-server: $schema={fileschemas.path('spec').as_uri()}"  # a URI: no spaces
    assert problems(server, spec) == []
    wrong = spec.read_text(encoding="utf-8").replace("launcher: torchrun", "launcher: mpirun")
    assert [m for _, marked, m in problems(server, spec.with_name("unsaved-job.yaml"), wrong) if marked == "mpirun"]


def test_a_wrong_type_and_an_unknown_key_are_named(server, tmp_path):
    text = (
        f"{fileschemas.install_modeline('spec')}\n"
        "name: train\n"
        "command: python train.py\n"
        "kind: multi-node\n"
        "resources: {nodes: two, gpus: 8}\n"
        "shh: true\n"
    )
    found = problems(server, tmp_path / "job.yaml", text)
    assert (4, "two", 'Incorrect type. Expected "integer".') in found
    assert (5, "shh", "Property shh is not allowed.") in found
    assert len(found) == 2, found


def test_completion_offers_the_specs_keys_and_choices(server, tmp_path):
    uri = server.open(tmp_path / "job.yaml", f"{fileschemas.install_modeline('spec')}\nname: train\nkind: \n\n")
    keys = set(fileschemas.build("spec")["properties"]) - {"name", "kind"}
    assert keys <= set(server.completion(uri, 3, 0))  # every other top-level key, at an empty line
    assert {"single", "multi-node", "experiment", "slurm"} <= set(server.completion(uri, 2, 6))


def test_the_config_is_checked_by_a_modeline_or_by_the_editors_schema_setting(tmp_path):
    text = "refresh_seconds: fast\nclusters:\n  - {name: a, kind: local, ssh: me@login}\n"
    by_line = tmp_path / "by-line.yaml"
    folder = tmp_path / "yanflow"
    folder.mkdir()
    # VS Code's `yaml.schemas` (Neovim's `settings.yaml.schemas`): a schema for the files of a glob.
    schemas = {fileschemas.path("config").as_uri(): "**/yanflow/config.yaml"}
    with language_server(tmp_path, tmp_path / "server.log", schemas=schemas) as server:
        with_line = f"{fileschemas.install_modeline('config')}\n{text}"
        for path, body, first in ((by_line, with_line, 1), (folder / "config.yaml", text, 0)):
            found = problems(server, path, body)
            assert (first, "fast", 'Incorrect type. Expected "number".') in found, found
            assert [m for line, marked, m in found if (line, marked) == (first + 2, "ssh")], found  # Slurm's key
        assert problems(server, tmp_path / "other.yaml", text) == []  # no schema: nothing to say


def test_a_schema_line_the_server_cannot_load_is_a_problem_it_shows(server, tmp_path):
    """What the samples' zero problems rule out (their line once named an unreachable URL)."""
    found = problems(server, tmp_path / "job.yaml", "# yaml-language-server: $schema=missing.json\nname: x\n")
    assert [m for _, _, m in found if m.startswith("Unable to load schema from")], found
