"""Pure renderers: domain objects to table cells, grid cells, plots and status words. No widgets here."""
