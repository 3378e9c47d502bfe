import pytest

from kafkalog_cli.errors import LockedError, OutsideLogDirError
from kafkalog_cli.storage.lock import LogDirLock
from tests.helpers.locks import hold_lock


def test_lock_and_release(tmp_path):
    with LogDirLock(tmp_path):
        assert (tmp_path / ".lock").exists()
    # re-acquirable
    with LogDirLock(tmp_path):
        pass


def test_conflict_names_the_pid(tmp_path):
    p = hold_lock(tmp_path / ".lock")
    try:
        with pytest.raises(LockedError) as e:
            LogDirLock(tmp_path).acquire()
        assert f"in use by process {p.pid}" in str(e.value)
    finally:
        p.kill()
        p.wait()
    with LogDirLock(tmp_path):
        pass


def test_a_lock_file_linked_out_of_the_log_dir_is_not_created_there(tmp_path):
    log_dir, outside = tmp_path / "logdir", tmp_path / "outside"
    log_dir.mkdir()
    outside.mkdir()
    (log_dir / ".lock").symlink_to(outside / "lock")
    with pytest.raises(OutsideLogDirError) as e:
        LogDirLock(log_dir).acquire()
    assert str(e.value).startswith(
        f"{log_dir / '.lock'}: through a symbolic link to {outside / 'lock'}"
    )
    assert list(outside.iterdir()) == []


def test_follow_symlinks_takes_a_lock_file_linked_out(tmp_path):
    log_dir, outside = tmp_path / "logdir", tmp_path / "outside"
    log_dir.mkdir()
    outside.mkdir()
    (log_dir / ".lock").symlink_to(outside / "lock")
    with LogDirLock(log_dir, follow_symlinks=True):
        assert (outside / "lock").exists()


def test_a_lock_file_linked_inside_the_log_dir_is_taken(tmp_path):
    (tmp_path / "held").write_bytes(b"")
    (tmp_path / ".lock").symlink_to(tmp_path / "held")
    with LogDirLock(tmp_path):
        pass
    assert (tmp_path / ".lock").is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        ".lock",
        "held",
    ]
