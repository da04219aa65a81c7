"""The store: the only code that imports lancedb."""
