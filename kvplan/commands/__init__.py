"""Typer command functions the CLI attaches (``kvplan.cli`` owns the app)."""
