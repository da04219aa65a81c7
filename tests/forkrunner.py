"""A warm process that runs CLI command lines, each in a child forked for it (for the crash tests).

Started once (``python tests/forkrunner.py``), it imports the CLI and the store's libraries and
then, for each JSON line ``{"argv": [...], "env": {...}, "out": PATH}`` on stdin, forks: the
child sets the variables, points stdout and stderr at ``PATH.out`` and ``PATH.err``, runs
``openviking`` with ``argv`` and exits with its status (or, at a fault point, as that says);
the parent answers ``{"code": N}``. The parent itself never opens a store, so each child starts
from the state a fresh process has, less the second of imports: a kill point costs a fork.
"""

from __future__ import annotations

import json
import os
import sys
import warnings


def main() -> None:
    import lancedb  # noqa: F401  (imported once, here, for every child)
    import pyarrow  # noqa: F401

    from openviking_cli.main import main as cli

    # LanceDB warns in each child that it was forked; this parent never used it, so nothing
    # was mid-operation.
    warnings.filterwarnings("ignore", message="lancedb fork support")
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(cli, request)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        sys.stdout.write(json.dumps({"code": code}) + "\n")
        sys.stdout.flush()


def _child(cli: object, request: dict[str, object]) -> None:
    code = 70
    try:
        os.environ.update(request["env"])  # type: ignore[arg-type]
        out = str(request["out"])
        for fd, suffix in ((1, ".out"), (2, ".err")):
            target = os.open(out + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        code = cli(list(request["argv"]))  # type: ignore[operator, call-overload]
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    main()
