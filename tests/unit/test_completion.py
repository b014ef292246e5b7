"""``yanflow-tui completion SHELL``: shtab's static scripts from the CLI's own parser, for bash, zsh and
fish; bash's is sourced into a real bash and asked to complete."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from jobhelpers import run_cli


@pytest.mark.parametrize(
    "shell,marker",
    [
        ("bash", "complete -o bashdefault -F _shtab_yanflow_tui yanflow-tui"),
        ("zsh", "#compdef yanflow-tui"),
        ("fish", "complete -c yanflow-tui"),
    ],
)
def test_each_shell_gets_its_script(home, shell, marker):
    result = run_cli("completion", shell)
    assert result.returncode == 0, result.stderr
    assert marker in result.stdout
    for command in ("jobs", "nodes", "submit", "cancel", "logs", "completion"):
        assert command in result.stdout
    checker = shutil.which(shell)
    if checker and shell != "bash":  # a syntax check where that shell is installed
        parsed = subprocess.run([checker, "-n"], input=result.stdout, capture_output=True, text=True)
        assert parsed.returncode == 0, parsed.stderr


def test_an_unknown_shell_is_a_usage_error(home):
    result = run_cli("completion", "powershell")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def _complete(script, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words``, with ``script`` sourced."""
    line = " ".join(words)
    program = (
        f'source "{script}"\n'
        "complete -p yanflow-tui || exit 9\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
        "_shtab_yanflow_tui\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[1:]  # the first line is complete -p's


def test_bash_completes_subcommands_and_their_options(home, tmp_path):
    script = tmp_path / "yanflow-tui.bash"
    script.write_text(run_cli("completion", "bash").stdout)
    assert _complete(script, ["yanflow-tui", "lo"]) == ["logs"]
    assert _complete(script, ["yanflow-tui", "c"]) == ["cancel", "completion"]
    assert _complete(script, ["yanflow-tui", "completion", ""]) == ["bash", "zsh", "fish"]
    assert _complete(script, ["yanflow-tui", "logs", "--fo"]) == ["--follow"]
