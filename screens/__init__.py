"""Textual screens of the console: Queue, Nodes, Submit, Logs, and the modal dialogs.

Each screen owns its bindings and handlers; the app only routes data and modes.
"""
