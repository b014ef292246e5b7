"""The Queue's model, apart from its screen and free of Textual (an import-linter contract says so):
``joblist`` (each cluster's entries and groups), ``queueview`` (the rows, what they differ in, the
counts) and ``warming`` (what to make ahead while the user is idle)."""
