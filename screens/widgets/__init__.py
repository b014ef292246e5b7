"""Reusable widgets of the screens: the virtualised table, the GPU grid, the log view, the cluster bar,
the footer, the status line and the members table."""
