"""``python -m openviking_cli``."""

from .main import console

console()
