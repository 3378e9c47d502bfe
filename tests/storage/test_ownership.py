"""Files the broker can open (issue 23): run as root on a log dir owned by the broker's user, every
file kafkalog creates or rewrites (segments, indexes, snapshots, checkpoints, swaps, .lock) gets
the owner, group and mode of the file it replaces, else of its directory's files; quarantine
folders keep the owner and mode of what they hold, and `quarantine restore` puts them back."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.lock import LogDirLock
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.broker_start import broker_verdict, needs_broker
from tests.helpers.doctor import broker_user
from tests.helpers.fullfs import EXAMPLES

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="kafkalog adopts owners only when run as root"
)
MODE = 0o640  # not what root's umask gives a new file (0644): a mode that must be copied
NOW = "1795249186389"


def owned_copy(base: Path, user: pwd.struct_passwd) -> Path:
    d = base / "logdir"
    shutil.copytree(EXAMPLES, d)
    for root, dirs, files in os.walk(d):
        os.chown(root, user.pw_uid, user.pw_gid)
        os.chmod(root, 0o750)
        for f in files:
            os.chown(os.path.join(root, f), user.pw_uid, user.pw_gid)
            os.chmod(os.path.join(root, f), MODE)
    return d


def foreign(d: Path, user: pwd.struct_passwd) -> list[str]:
    """Every file and directory under `d` whose owner, group or mode is not the broker's."""
    out = []
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root, name)
            st = p.lstat()
            want = 0o750 if name in dirs else MODE
            if (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) != (user.pw_uid, user.pw_gid, want):
                out.append(
                    f"{p.relative_to(d)}: {st.st_uid}:{st.st_gid} {oct(stat.S_IMODE(st.st_mode))}"
                )
    return out


def kafkalog(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_fsops_new_and_rewritten_files_take_the_owner_of_what_they_replace_or_of_their_neighbours(
    base,
):
    user = broker_user()
    d = owned_copy(base, user)
    part = d / "txn-0"
    fsops = FsOps(d, Quarantine(None, "test"))
    fsops.write_atomic(part / "leader-epoch-checkpoint", b"0\n0\n")  # replaces a file
    fsops.write_atomic(part / "00000000000000000099.snapshot", b"\0" * 10)  # a new one
    with fsops.create(part / "00000000000000000000.log.cleaned") as f:  # streamed
        f.write(b"x")
    (d / ".lock").unlink(missing_ok=True)
    with LogDirLock(d):
        pass
    assert foreign(d, user) == []


def test_every_command_as_root_leaves_files_the_brokers_user_owns(base):
    user = broker_user()
    d = owned_copy(base, user)
    kafkalog("roll", d, "--topic", "txn", "--topic", "codec-*", "--now", NOW)
    kafkalog("recover", d, "--all", "--repair", "--now", NOW)
    kafkalog(
        "retain",
        d,
        "--assume-kafka-defaults",
        "--config",
        "retention.bytes=20000",
        "--topic",
        "multi-segment",
        "--now",
        NOW,
    )
    kafkalog("delete-records", d, "--topic", "idempotent-lz4", "--before", "5")
    kafkalog(
        "compact", d, "--assume-kafka-defaults", "--force", "--topic", "compacted", "--now", NOW
    )
    assert (d / "multi-segment-0" / "00000000000000000600.log").exists()  # a segment created
    assert (d / ".lock").exists()
    assert foreign(d, user) == []
    # the quarantine beside the log dir: folders and kept files as the log dir's
    q = base / ".kafkalog-quarantine"
    kept = [p for p in q.rglob("*")]
    assert kept and foreign(q, user) == []


def test_quarantine_restore_puts_them_back_as_they_were(base):
    user = broker_user()
    d = owned_copy(base, user)
    before = {
        str(p.relative_to(d)): (
            p.lstat().st_uid,
            p.lstat().st_gid,
            stat.S_IMODE(p.lstat().st_mode),
            p.read_bytes(),
        )
        for p in d.rglob("*")
        if p.is_file() and p.name != ".lock"
    }
    kafkalog(
        "retain",
        d,
        "--assume-kafka-defaults",
        "--config",
        "retention.bytes=20000",
        "--topic",
        "multi-segment",
        "--now",
        NOW,
        "--quarantine",
        base / "q",
    )
    (folder,) = [m.parent for m in (base / "q").rglob("manifest.jsonl")]
    kafkalog("quarantine", "restore", folder)
    after = {
        str(p.relative_to(d)): (
            p.lstat().st_uid,
            p.lstat().st_gid,
            stat.S_IMODE(p.lstat().st_mode),
            p.read_bytes(),
        )
        for p in d.rglob("*")
        if p.is_file() and p.name != ".lock"
    }
    assert after == before


@needs_broker
def test_the_broker_as_its_user_starts_on_what_kafkalog_left(base):
    user = broker_user()
    d = owned_copy(base, user)
    kafkalog("roll", d, "--now", NOW)
    kafkalog(
        "retain",
        d,
        "--assume-kafka-defaults",
        "--config",
        "retention.bytes=20000",
        "--topic",
        "multi-segment",
        "--now",
        NOW,
    )
    assert foreign(d, user) == []
    work = base / "work"
    v = broker_verdict([d], work, user=user.pw_name)
    assert v.started, v.log[-3000:]
    assert not v.lines("AccessDeniedException") and not v.lines("Permission denied")
