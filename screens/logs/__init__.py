"""The Logs screen and its tabs."""
