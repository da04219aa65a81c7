"""One module per command group; each defines a small ``app`` that main.py mounts."""
