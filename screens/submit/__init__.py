"""The Submit wizard: the screen, its field block and its files (specs, templates, drafts)."""
