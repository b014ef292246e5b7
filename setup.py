"""Package discovery: ``screens/`` and ``backends/`` install as ``yanflow_tui.screens`` and
``yanflow_tui.backends``; every sub-package under them (and under ``yanflow_tui/``) is found, never listed,
so a new one can never be silently missing from the wheel. Every package ships its ``.tcss`` stylesheets."""

from setuptools import find_packages, setup

MAPPED = {
    "yanflow_tui.screens": "screens",
    "yanflow_tui.backends": "backends",
    "yanflow_tui.sample_jobs": "sample_jobs",
}


def packages() -> list[str]:
    found = find_packages(include=["yanflow_tui", "yanflow_tui.*"])
    for name, folder in MAPPED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


PACKAGES = packages()
DATA = {name: ["*.tcss"] for name in PACKAGES}
# The JSON Schemas of the job spec and the config (yanflow_tui.fileschemas), for editors.
DATA["yanflow_tui.fileschemas"] = ["*.json"]
# The samples the template picker lists, as package data.
DATA["yanflow_tui.sample_jobs"] = [
    "*.yaml",
    "spec.schema.json",  # the spec schema's copy that the samples' `$schema` lines name (yanflow_tui.fileschemas)
    "det-hpsearch/*",
    "det-hpsearch/.detignore",
    "native/*",  # job files as users have them, submitted as they are written
    "native/det-mnist/*",
    "projects/*/*",  # the template projects `yanflow-tui init` writes (yanflow_tui.projects)
    "projects/*/configs/*",  # a project's config files (mmdet: its MMDetection config)
    "projects/*/.detignore",
]

# The JSON Schemas of the command line's --json outputs (docs/json.md).
DATA["yanflow_tui.output_schemas"] = ["*.json"]

setup(packages=PACKAGES, package_dir=MAPPED, package_data=DATA)
