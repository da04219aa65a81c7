"""The version of openviking."""

__version__ = "0.1.0"
