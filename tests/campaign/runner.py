"""Runs kafkalog as a user does: a subprocess (`python -m kafkalog_cli`, this interpreter, the
PYTHONPATH it has), in its own session so a timeout or a kill reaches every child, optionally
without the file-permission override capabilities (root only; setpriv)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from .workspace import Workspace

TIMEOUT_S = 60.0
DROP_CAPS = [
    "setpriv",
    "--bounding-set",
    "-dac_override,-dac_read_search",
    "--inh-caps",
    "-dac_override,-dac_read_search",
    "--",
]
FAULT_ENV = "KAFKALOG_FAULT_AFTER"  # kafkalog's own: die (exit 137, as SIGKILL) after step N
# The program under test; the oracle's own tests put a fake command here.
PROGRAM: list[str] = [sys.executable, "-m", "kafkalog_cli"]


def package_root() -> str:
    """Where the kafkalog_cli this process imports lives (a worktree's src/, or site-packages):
    the child imports the same one, whatever its cwd (a relative PYTHONPATH would not resolve
    in the workspace, and an editable install elsewhere would be taken instead)."""
    import kafkalog_cli

    return os.path.dirname(os.path.dirname(os.path.abspath(kafkalog_cli.__file__)))


def can_drop_caps() -> bool:
    return os.geteuid() != 0 or shutil.which("setpriv") is not None


@dataclass
class Run:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    killed: bool = False  # ended by our SIGKILL or by the injected fault (137)

    def shell(self) -> str:
        """The command line, for a reproduction."""
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)


def kafkalog(args: list[str], drop_caps: bool = False) -> list[str]:
    argv = [*PROGRAM, *args]
    return (DROP_CAPS + argv) if drop_caps and os.geteuid() == 0 else argv


def run(
    ws: Workspace,
    args: list[str],
    drop_caps: bool = False,
    timeout: float | None = None,
    kill_after_s: float | None = None,
    fault_after: int | None = None,
) -> Run:
    """One run. kill_after_s: SIGKILL the whole session that many seconds after the start (if
    it is still running); fault_after: kafkalog's own step-exact kill (KAFKALOG_FAULT_AFTER)."""
    argv = kafkalog(args, drop_caps)
    timeout = TIMEOUT_S if timeout is None else timeout
    env = ws.env()
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root()]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isabs(p)]
    )
    if fault_after is not None:
        env[FAULT_ENV] = str(fault_after)
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=ws.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    killed = timed_out = False
    limit = timeout if kill_after_s is None else min(timeout, kill_after_s)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        killed = kill_after_s is not None and kill_after_s < timeout
        timed_out = not killed
    rc = proc.returncode
    if fault_after is not None and rc == 137:
        killed = True
    return Run(
        argv,
        rc,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        time.monotonic() - start,
        timed_out,
        killed,
    )
