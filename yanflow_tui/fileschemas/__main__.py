"""``python -m yanflow_tui.fileschemas``: write the shipped schema files again from the field table."""

from yanflow_tui.fileschemas import write

for written in write():
    print(written)
