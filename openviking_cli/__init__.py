"""The openviking command line (Typer + rich). Nothing is imported here on purpose."""
