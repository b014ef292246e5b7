"""What the Queue says when it lists nothing: on a first start, how to submit and where clusters are
configured (with a minimal Slurm example); when a filter or "mine" hides every job, that."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from yanflow_tui.locations import default_config_path, display_path
from yanflow_tui.screens.widgets.unchanged import update_static

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp

SLURM_EXAMPLE = """clusters:
  - name: hpc
    kind: slurm
    ssh: you@login.hpc.example  # omit on the login node"""


class QueueHint(Static):
    """What to do when the Queue lists nothing: on a first start, how to submit and where clusters
    are configured (with a minimal Slurm example); when a filter or "mine" hides every job, that."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    def show_for(self, shown: int, total: int, filtering: bool, mine: bool) -> None:
        self.display = shown == 0
        if shown:
            return
        if total:
            hidden = f"{total} job{'s' if total != 1 else ''}"
            if filtering:
                self._say(Text(f"The filter hides {hidden}: esc clears it, / changes it."))
            else:
                self._say(Text(f"{hidden} of other users are hidden: u shows every user's jobs."))
            return
        self._say(self._first_steps())

    def _say(self, text: Text) -> None:
        """``text`` shown; the same text again (a refresh that changed nothing) is not painted again."""
        update_static(self, text)

    def _first_steps(self) -> Text:
        app = self.app
        source = app.config.source
        file = Path(source) if source != "auto-discovered" else default_config_path()
        out = Text("No jobs listed. ", "bold")
        if app.read_only:
            out.append("Read-only: submitting is off.\n")
        else:
            out.append("s", "bold reverse")
            out.append(" submits a job.\n")
        out.append("5", "bold reverse")
        out.append(" shows each cluster's state. ")
        if source != "auto-discovered":
            out.append(f"Clusters are configured in {display_path(file)}, e.g.:\n")
        else:
            out.append(
                f"No config file: these clusters were discovered. Add yours in {display_path(file)}, "
                "e.g. for a Slurm login node:\n"
            )
        out.append(SLURM_EXAMPLE, "dim")
        return out
