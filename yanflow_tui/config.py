"""Typed config: loaded (or auto-discovered) outside the App and passed in.

File location: ``--config PATH``, else ``$YANFLOW_CONFIG``, else ``$XDG_CONFIG_HOME/yanflow/config.yaml``.
With no file at the default location, clusters are discovered: each backend package declares how
(this machine always, Slurm when ``squeue`` is on PATH, Kubernetes when a kubeconfig exists,
Determined when ``DET_MASTER`` is set). The kinds, and each kind's own cluster keys and refresh
default, come from the backend registry (``yanflow_tui.backends.registry``); nothing here lists them.

    read_only: false          # true closes the gate on every cluster
    refresh_seconds: 5
    theme: textual-dark
    keymap: {cancel-job: K}   # binding id -> key
    notify: {states: [failed]}  # a word when my jobs end (``notices``); `notify: false`: none
    clusters:
      - name: local
        kind: local
      - name: hpc
        kind: slurm
        ssh: alice@login.hpc.example
        read_only: true
        defaults:               # what the Submit form starts with on this cluster (spec fields)
          kind: multi-node
          resources: {gpus: 8}
          slurm: {partition: gpu, time: "04:00:00"}
        metrics: {prometheus: "http://prom.hpc.example:9090"}   # DCGM GPU utilisation (any kind)
        storage: hpc-gpfs       # clusters naming the same storage see the same files (resume moves nothing)
        images:                 # the catalogue the Submit form's image field offers (free text still goes)
          - name: nvcr.io/nvidia/pytorch:24.05-py3
            description: NGC PyTorch
            frameworks: [pytorch, deepspeed]
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yanflow_tui import idlegpus
from yanflow_tui.backends import registry
from yanflow_tui.errors import ConfigError, SpecError
from yanflow_tui.fieldtable import CLUSTER_FIELDS, CLUSTER_SHARED_OPTIONS, CONFIG_FIELDS, keys, required
from yanflow_tui.idlegpus import IdleRule
from yanflow_tui.images import parse_images
from yanflow_tui.locations import default_config_path
from yanflow_tui.model import DEFAULT_REFRESH, ClusterConfig
from yanflow_tui.notices import NoticeSettings, parse_notify
from yanflow_tui.yamldoc import Checker, Doc, as_written, join, load_yaml, load_yaml_bytes

# The keys, from the declarative table (``fieldtable``) the JSON Schema is made from.
TOP_KEYS = keys(CONFIG_FIELDS)
COMMON_CLUSTER_KEYS = keys(CLUSTER_FIELDS)
# Keys every kind takes that stay in ClusterConfig.options: ``metrics: {prometheus: URL}`` (yanflow_tui.gpumetrics).
SHARED_OPTIONS = keys(CLUSTER_SHARED_OPTIONS)
REFRESH_MINIMUM = CONFIG_FIELDS["refresh_seconds"].minimum
# Each kind's own keys (``BackendInfo.options``) come on top; the backends read them from ClusterConfig.options.


@dataclass(frozen=True)
class Config:
    clusters: tuple[ClusterConfig, ...]
    read_only: bool = False
    refresh_seconds: float = DEFAULT_REFRESH
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    source: str = "auto-discovered"
    all_users: bool = False  # the queue starts on everyone's jobs instead of mine
    mouse: bool = True  # false: the terminal keeps the mouse (its own select and copy); f2 switches
    notify: NoticeSettings = field(default_factory=NoticeSettings)  # a word when my jobs end (``notices``)
    # The file line of ``theme`` and of each ``keymap.<id>``: names the app checks at startup
    # (``check_names``), since only it knows its themes and binding ids.
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    idle_gpus: IdleRule = field(default_factory=IdleRule)  # ``idle_gpus: {below_percent, minutes}``

    def cluster(self, name: str) -> ClusterConfig:
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        known = ", ".join(c.name for c in self.clusters) or "none"
        raise ConfigError(f"no cluster named {name!r} (configured: {known})")

    def with_read_only(self) -> Config:
        """A copy with every cluster's gate closed (``--read-only``)."""
        clusters = tuple(_replace(c, read_only=True) for c in self.clusters)
        return _replace(self, clusters=clusters, read_only=True)


def _replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)


def load_config(path: str | None = None, env: Mapping[str, str] = os.environ, lenient: bool = False) -> Config:
    """Load the config from ``path``, ``$YANFLOW_CONFIG`` or the default location, or discover one.
    ``lenient`` (the console): a problem inside one cluster's entry makes that cluster one in error
    carrying the located problems (see ``config_from_doc``); any other problem still raises."""
    explicit = path or env.get("YANFLOW_CONFIG") or None
    file = Path(explicit) if explicit else default_config_path(env)
    if not file.exists():
        if explicit:
            raise ConfigError(f"config file not found: {file}")
        return Config(clusters=tuple(discover(env)))
    try:
        data = file.read_bytes()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read config {file}: {exc}") from None
    return config_from_doc(load_yaml_bytes(data, str(file)), env, lenient=lenient)


def parse_config(text: str, file: str, env: Mapping[str, str] = os.environ, lenient: bool = False) -> Config:
    return config_from_doc(load_yaml(text, file), env, lenient=lenient)


_DEFAULTS = re.compile(r"^clusters\[\d+\]\.defaults\.")


def multiline(path: str) -> bool:
    """Config fields that may hold several lines: descriptions, and the defaults' spec fields that may."""
    from yanflow_tui import spec as specs

    rest = _DEFAULTS.sub("", path)
    return rest != path and specs.multiline(rest) or re.fullmatch(r"clusters\[\d+\]\.description", path) is not None


_CLUSTER_PATH = re.compile(r"^clusters\[(\d+)\]")


def config_from_doc(doc: Doc, env: Mapping[str, str] = os.environ, lenient: bool = False) -> Config:
    """The config in ``doc``; every problem raises one ``SpecError`` listing them all, except with
    ``lenient``, where the problems inside ``clusters[i]`` become that cluster's ``problems`` (it is
    kept under its name, or ``clusters[i]`` when it has none) so the other clusters still work."""
    check = Checker(doc)
    check.text(multiline)  # control characters, lone surrogates, bytes not UTF-8: in every field
    top = check.mapping("", doc.data, TOP_KEYS)
    read_only = check.boolean("read_only", top.get("read_only")) or False
    refresh = check.number("refresh_seconds", top.get("refresh_seconds"), minimum=REFRESH_MINIMUM) or DEFAULT_REFRESH
    theme = check.string("theme", top.get("theme"))
    keymap: dict[str, str] = {}
    for key, value in check.mapping("keymap", top.get("keymap"), _anything(top.get("keymap"))).items():
        keys = check.string(join("keymap", key), value)
        if keys:
            keymap[str(key)] = keys
    clusters: list[ClusterConfig] = []
    made: dict[int, ClusterConfig | None] = {}
    raw = top.get("clusters")
    if raw is None:
        clusters = discover(env)
    elif not isinstance(raw, list):
        check.error("clusters", "expected a list of clusters")
    else:
        for i, item in enumerate(raw):
            cluster = made[i] = _cluster(
                check, join("clusters", i), item, read_only, refresh if "refresh_seconds" in top else None
            )
            if cluster is None:
                continue
            if any(c.name == cluster.name for c in clusters):
                check.error(join(join("clusters", i), "name"), f"duplicate cluster name {cluster.name!r}")
                continue
            clusters.append(cluster)
        if not clusters and not check.problems:
            check.error("clusters", "no clusters configured")
    all_users = bool(check.boolean("all_users", top.get("all_users")))
    mouse = check.boolean("mouse", top.get("mouse")) is not False
    notify = parse_notify(check, top.get("notify"))
    known = {c.name for c in clusters}
    for i, name in enumerate(notify.clusters):
        if clusters and name not in known:
            check.error(f"notify.clusters[{i}]", f"no cluster named {name!r} (configured: {', '.join(sorted(known))})")
    idle_rule = idlegpus.check_option(check, top.get("idle_gpus"))
    if lenient and check.problems and isinstance(raw, list):
        clusters = _keep_broken(check, clusters, made, raw, read_only)
    check.raise_if_any()
    lines = {path: doc.line(path) for path in ("theme", *(join("keymap", key) for key in keymap))}
    return Config(
        tuple(clusters),
        read_only,
        refresh,
        theme,
        keymap,
        source=doc.file,
        all_users=all_users,
        mouse=mouse,
        notify=notify,
        lines=lines,
        idle_gpus=idle_rule,
    )


def check_names(config: Config, themes: Iterable[str], binding_ids: Iterable[str]) -> None:
    """Raise ``SpecError`` (``file:line: field: message``, with a "did you mean") for a ``theme:``
    that is none of ``themes`` and each ``keymap:`` id that is none of ``binding_ids``. The app
    calls it at startup with its own themes and the ids of its bindings (config imports no UI)."""
    problems: list[tuple[str, int, str, str]] = []

    def unknown(path: str, name: str, what: str, known: list[str]) -> None:
        guess = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f'; did you mean "{guess[0]}"?' if guess else f"; one of: {', '.join(known)}"
        problems.append((config.source, config.lines.get(path, 0), path, f"unknown {what} {name!r}{hint}"))

    known_themes = sorted(themes)
    if config.theme and config.theme not in known_themes:
        unknown("theme", config.theme, "theme", known_themes)
    known_ids = sorted(binding_ids)
    for key in config.keymap:
        if key not in known_ids:
            unknown(join("keymap", key), key, "binding id", known_ids)
    if problems:
        problems.sort(key=lambda p: p[1])
        raise SpecError(problems)


def _keep_broken(
    check: Checker, clusters: list[ClusterConfig], made: dict[int, ClusterConfig | None], raw: list, read_only: bool
) -> list[ClusterConfig]:
    """Move the problems located inside one cluster's entry onto that cluster (in the config's
    order), leaving in ``check`` only those that concern the whole file."""
    from yanflow_tui.errors import format_problem

    by_index: dict[int, list[tuple[str, int, str, str]]] = {}
    rest = []
    for problem in check.problems:
        found = _CLUSTER_PATH.match(problem[2])
        if found and int(found.group(1)) < len(raw):
            by_index.setdefault(int(found.group(1)), []).append(problem)
        else:
            rest.append(problem)
    if not by_index:
        return clusters
    check.problems[:] = rest
    kept: list[ClusterConfig] = []
    names: set[str] = set()
    for i in range(len(raw)):
        cluster = made.get(i)
        problems = sorted(by_index.get(i, ()), key=lambda p: p[1])
        if problems:
            item = raw[i] if isinstance(raw[i], dict) else {}
            name = cluster.name if cluster is not None else str(item.get("name") or "") or join("clusters", i)
            if name in names:
                name = join("clusters", i)
            kind = cluster.kind if cluster is not None else str(item.get("kind") or "unknown")
            cluster = ClusterConfig(
                name,
                kind if kind in registry.kinds() else "unknown",
                read_only=read_only,
                problems=tuple(format_problem(*p) for p in problems),
            )
        if cluster is not None and cluster.name not in names:
            names.add(cluster.name)
            kept.append(cluster)
    return kept


def _anything(value: Any) -> list[str]:
    return list(value) if isinstance(value, dict) else []


def _cluster(check: Checker, path: str, item: Any, read_only: bool, refresh: float | None) -> ClusterConfig | None:
    if not isinstance(item, dict):
        check.error(path, "expected a mapping with name and kind")
        return None
    left_out = registry.broken(str(item.get("kind")))
    if left_out and isinstance(item.get("name"), str):  # its plugin failed: this cluster says why, the rest work
        return ClusterConfig(item["name"], str(item["kind"]), read_only=read_only, problems=(left_out,))
    kind = check.string(join(path, "kind"), item.get("kind"), choices=registry.kinds())
    info = registry.info(kind) if kind else None
    own = info.options if info else tuple(o for i in registry.infos() for o in i.options)  # no kind: any kind's
    allowed = COMMON_CLUSTER_KEYS + SHARED_OPTIONS + own
    entry = check.mapping(path, item, allowed, required=required(CLUSTER_FIELDS))
    name = check.string(join(path, "name"), entry.get("name"))
    if not name or not kind or info is None:
        return None
    options = {k: v for k, v in entry.items() if k not in COMMON_CLUSTER_KEYS}
    if "metrics" in options:
        from yanflow_tui import gpumetrics

        options["metrics"] = gpumetrics.check_option(check, join(path, "metrics"), options["metrics"])
    if "storage" in options:  # which clusters share files (``yanflow_tui.resume``)
        options["storage"] = check.string(join(path, "storage"), options["storage"])
    defaults = _defaults(check, join(path, "defaults"), entry.get("defaults"))
    images = parse_images(check, join(path, "images"), entry.get("images"))
    return ClusterConfig(
        name=name,
        kind=kind,
        read_only=read_only or bool(check.boolean(join(path, "read_only"), entry.get("read_only"))),
        refresh_seconds=check.number(
            join(path, "refresh_seconds"), entry.get("refresh_seconds"), minimum=REFRESH_MINIMUM
        )
        or refresh
        or info.refresh,
        description=check.string(join(path, "description"), entry.get("description"), nonempty=False) or "",
        options=options,
        defaults=defaults,
        images=images,
    )


def _defaults(check: Checker, path: str, value: Any) -> dict[str, Any]:
    """A cluster's ``defaults:``: spec fields (any but ``cluster``), checked by the spec rules, with
    problems located at their line in the config file."""
    from yanflow_tui import spec as specs  # spec needs nothing from here; imported when used

    if value is None:
        return {}
    if not isinstance(value, dict):
        check.error(path, "expected a mapping of spec fields, e.g. {resources: {gpus: 8}}")
        return {}
    keys = [k for k in specs.top_keys() if k != "cluster"]
    check.mapping(path, value, keys)
    prefix = path + "."
    lines = {k[len(prefix) :]: v for k, v in check.doc.lines.items() if k.startswith(prefix)}
    raw = {k[len(prefix) :]: v for k, v in check.doc.raw.items() if k.startswith(prefix)}
    # Stand-ins for what every spec needs, so only the defaults' own problems are reported.
    probe = {
        "name": "defaults",
        "command": "true",
        "kind": "multi-node",
        **{k: v for k, v in value.items() if k in keys},
    }
    try:
        specs.spec_from_doc(Doc(check.doc.file, probe, {"": check.doc.line(path), **lines}, raw))
    except SpecError as exc:
        for _file, _line, field_path, message in exc.problems:
            check.error(join(path, field_path) if field_path else path, message)
        return {}
    return {k: as_written(v, join(path, k), check.doc.raw) for k, v in value.items() if k in keys}


def discover(env: Mapping[str, str] = os.environ) -> list[ClusterConfig]:
    """Clusters visible from here without any config: what each backend package's ``discover`` finds,
    in the registry's order, limited to the kinds in ``$YANFLOW_DISCOVER`` (e.g. "local,kubernetes")
    when it is set; then each package's ``review`` sees the whole list."""
    wanted = env.get("YANFLOW_DISCOVER")
    kinds = None if wanted is None else {k.strip() for k in wanted.split(",")}
    found: list[ClusterConfig] = []
    for info in registry.infos():
        if info.discover is not None and (kinds is None or info.kind in kinds):
            found += [c for c in _found(info, info.discover, env) or () if kinds is None or c.kind in kinds]
    for info in registry.infos():
        if info.review is not None and found:
            found = _found(info, info.review, found) or found
    return found


def _found(info: registry.BackendInfo, call: Callable[[Any], Iterable[Any]], arg: Any) -> list[Any] | None:
    """``call(arg)`` of a backend package's discovery; a failure is a note (a plugin's bug never stops the
    console or the CLI), and None."""
    try:
        return list(call(arg))
    except Exception as exc:
        registry.failed(info.kind, f"its discovery failed: {type(exc).__name__}: {exc}")
        return None


__all__ = [
    "ClusterConfig",
    "Config",
    "ConfigError",
    "SpecError",
    "check_names",
    "discover",
    "load_config",
    "parse_config",
]
