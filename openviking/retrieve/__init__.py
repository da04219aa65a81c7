"""Retrieval: find, search, grep and glob."""
