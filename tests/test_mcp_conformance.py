"""The MCP conformance suite (``@modelcontextprotocol/conformance``) against ``/mcp``: every
server scenario that applies to a server of tools alone passes.

The others ask for what this server does not declare (resources, prompts, logging,
completions, sampling, elicitation) or for the suite's own test tools (``test_simple_text``...).
``.ci/run`` installs the suite with npm and names its command in ``OPENVIKING_MCP_CONFORMANCE``;
without that variable (a clone with no npm) the test skips, and with it a missing command fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import HASH_CONF
from ovserver import handbook_store, thread_server

SCENARIOS = ["server-initialize", "ping", "tools-list", "tools-call-error", "dns-rebinding-protection"]
COMMAND_VARIABLE = "OPENVIKING_MCP_CONFORMANCE"


def _command() -> Path:
    named = os.environ.get(COMMAND_VARIABLE)
    if not named:
        pytest.skip(f"{COMMAND_VARIABLE} names no MCP conformance command (.ci/run installs one)")
    command = Path(named)
    assert command.exists(), f"{COMMAND_VARIABLE}={named}, which does not exist"
    return command


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_tools_server_passes_the_conformance_scenario(tmp_path: Path, scenario: str) -> None:
    command = _command()
    env = {**os.environ, "PATH": f"{command.parent}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    with thread_server(HASH_CONF, handbook_store(tmp_path)) as url:
        ran = subprocess.run(
            [str(command), "server", "--url", f"{url}/mcp", "--scenario", scenario],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output[-3000:]
    assert "0 failed" in output, output[-3000:]


def test_the_server_declares_tools_alone() -> None:
    from openviking.server.mcp import mcp_server

    capabilities = mcp_server(lambda: None).create_initialization_options().capabilities  # type: ignore[arg-type,return-value]
    declared = {name for name, value in capabilities.model_dump(exclude_none=True).items() if value}
    assert declared == {"tools"}, declared
    assert capabilities.tools is not None and capabilities.tools.list_changed is False
