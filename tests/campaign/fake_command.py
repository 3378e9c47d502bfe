"""A stand-in for kafkalog that breaks one promise on purpose (FAKE_BREAKS names which), so the
oracle's tests can show that each invariant catches its violation. Run as a script."""

import os
import sys
import time
from pathlib import Path


def main() -> int:
    breaks = os.environ.get("FAKE_BREAKS", "")
    args = sys.argv[1:]
    logdir = next((Path(a) for a in args if Path(a).name == "logdir"), None)
    ws = Path.cwd()
    if args[:2] == ["quarantine", "restore"]:
        return 0  # says it restored, puts nothing back
    if breaks == "outside":
        with open(ws / "outside" / "sentinel.txt", "a") as f:
            f.write("changed\n")
    elif breaks == "parent":
        (ws / "left-beside-the-log-dir").write_text("x")
    elif breaks == "hang":
        time.sleep(30)
    elif breaks == "traceback":
        print(
            'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom',
            file=sys.stderr,
        )
        return 3
    elif breaks == "bare-stderr":
        print("something went wrong", file=sys.stderr)
        return 3
    elif breaks == "exit-code":
        return 9
    elif breaks == "touch" and logdir is not None:
        f = logdir / "meta.properties"
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    elif breaks == "every-run" and logdir is not None and "--dry-run" not in args:
        with open(logdir / "meta.properties", "a") as f:
            f.write("# again\n")
    elif breaks == "lose-bytes" and logdir is not None and "--dry-run" not in args:
        folder = ws / "quarantine" / "20260101T000000.000000Z-fake"
        if not folder.exists():
            folder.mkdir()
            (folder / "manifest.jsonl").write_text("")
            (logdir / "meta.properties").unlink()
    elif breaks == "no-converge" and logdir is not None and "--dry-run" not in args:
        half = logdir / "half-done"
        if half.exists():
            (logdir / "result").write_text("after a kill")
            half.unlink()
        elif not (logdir / "result").exists():
            half.write_text("")
            if os.environ.get("KAFKALOG_FAULT_AFTER"):
                os._exit(137)
            (logdir / "result").write_text("uninterrupted")
            half.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
