"""The HTTP server of openviking and the MCP endpoint it mounts."""
