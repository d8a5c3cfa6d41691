"""Typer commands: parse, call one function, render. The only place that exits."""
