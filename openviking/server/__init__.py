"""The HTTP server of ``openviking serve`` and the MCP endpoint it mounts: the API over one embedded client per caller.

This is the only package that imports fastapi, starlette, uvicorn and mcp's server, and it
reaches the core only through :mod:`openviking.embedded.client`, the interface, the results, the
errors and the config. Importing it loads none of them: each module here imports what it needs.
"""
