"""Issue 26, points 7 and 8, as an operator meets them: one JSON Lines shape with totals for
every command that changes log dirs, a summary line on a terminal (also for a successful
retain, saying where the quarantine is), bytes freed as `du` sees them; and `quarantine list
LOGDIR` finding what --quarantine put elsewhere, through the registry in $KAFKALOG_STATE_DIR."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage import quarantine_registry
from tests.helpers import paths
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import ENVELOPE, lines, log_dir_report, of_kind, totals

KAFKALOG = str(Path(sys.executable).with_name("kafkalog"))
RETAIN = [
    "retain",
    "--assume-kafka-defaults",
    "--now",
    "1900000000000",
]  # segments of examples/ are due


def copy(tmp_path: Path, name: str = "data") -> Path:
    d = tmp_path / name
    shutil.copytree(EXAMPLES, d)
    return d


def du(path: Path) -> int:
    return int(
        subprocess.run(
            ["du", "-sB1", str(path)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )


def on_a_terminal(*args: str) -> tuple[int, str]:
    """Run the installed kafkalog with its stdout on a pseudo-terminal, as at 3 AM."""
    main, sub = pty.openpty()
    p = subprocess.Popen([KAFKALOG, *args], stdout=sub, stderr=subprocess.PIPE, close_fds=True)
    os.close(sub)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    return p.wait(timeout=60), out.decode().replace("\r\n", "\n")


# ------------------------------------------------------------------------------ point 7
@pytest.mark.slow  # the installed script on a pseudo-terminal
def test_a_successful_retain_on_a_terminal_says_what_it_did_and_where_the_quarantine_is(tmp_path):
    d = copy(tmp_path)
    code, out = on_a_terminal(*RETAIN, str(d))
    assert code == 0, out
    (folder,) = [p for p in (tmp_path / ".kafkalog-quarantine" / "data").iterdir()]
    (line,) = out.splitlines()
    assert line.startswith("retain: 1 log dir, 14 partitions, ") and " segments deleted, " in line
    assert line.endswith(f" held in the quarantine {folder}")
    # under cron (not a terminal) the same run stays quiet
    d2 = copy(tmp_path, "cron")
    p = subprocess.run([KAFKALOG, *RETAIN, str(d2)], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_every_mutating_command_ends_its_text_with_one_summary_line(tmp_path):
    d = copy(tmp_path)
    for args, head in (
        (
            ["recover", "--dry-run"],
            "recover --dry-run: 1 log dir, 14 partitions, 0 changes pending",
        ),
        (
            ["roll", "--topic", "txn"],
            "roll: 1 log dir, 1 partition, 4 changes, 4.0 KiB taken on disk, 56 B held in the quarantine ",
        ),
        (
            ["delete-records", "--before", "100", "--topic", "multi-segment", "--no-quarantine"],
            "delete-records: 1 log dir, 1 partition, ",
        ),
        (
            ["compact", "--assume-kafka-defaults", "--topic", "compacted"],
            "compact: 1 log dir, 1 partition",
        ),
    ):
        r = CliRunner().invoke(cli, [*args, str(d)])
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[-1].startswith(head), (args, r.stdout)


def test_freed_on_disk_is_what_du_sees_and_the_totals_sum_the_partitions(tmp_path):
    d = copy(tmp_path)
    before = du(d)
    r = CliRunner().invoke(cli, [*RETAIN, "--no-quarantine", "--format", "json", str(d)])
    assert r.exit_code == 0, r.output
    total = totals(r.stdout)
    assert total["freed_on_disk"] == before - du(d) > 0
    assert total["held_in_quarantine"] == 0 and total["quarantine"] == [] and total["unknown"] == {}
    parts = of_kind(r.stdout, "partition")
    assert total["segments_deleted"] == sum(p.get("segments_deleted") or 0 for p in parts) > 0
    assert total["partitions"] == len(parts) == 14
    # the partitions' figures and the log dir's checkpoints add up to the log dir's
    assert log_dir_report(r.stdout)["freed_on_disk"] == total["freed_on_disk"]


def test_a_figure_that_cannot_be_known_is_null_with_its_reason(tmp_path):
    d = copy(tmp_path)
    r = CliRunner().invoke(
        cli, ["compact", "--dry-run", "--assume-kafka-defaults", "--format", "json", str(d)]
    )
    total = totals(r.stdout)
    assert total["freed_on_disk"] is None and total["held_in_quarantine"] is None
    assert set(total["unknown"]) == {"freed_on_disk", "held_in_quarantine"}
    assert all(str(d) in why for why in total["unknown"].values())


def test_one_shape_for_every_mutating_command(tmp_path):
    """recover, roll, retain, compact, delete-records, move-partition, quarantine restore and
    prune: the same four fields first on every line, the totals last."""
    d = copy(tmp_path)
    q = tmp_path / "q"
    runs = [
        ["recover", "--quarantine", str(q), str(d)],
        ["roll", "--topic", "txn", "--quarantine", str(q), str(d)],
        [*RETAIN, "--quarantine", str(q), str(d)],
        ["compact", "--assume-kafka-defaults", "--quarantine", str(q), str(d)],
        ["delete-records", "--before", "0", "--topic", "txn", "--quarantine", str(q), str(d)],
    ]
    other = tmp_path / "disk2" / "data"
    other.mkdir(parents=True)
    (other / "meta.properties").write_bytes((d / "meta.properties").read_bytes())
    runs.append(["move-partition", str(d), str(other), "--topic", "txn", "--partition", "0"])
    commands = []
    for args in runs:
        r = CliRunner().invoke(cli, [*args, "--format", "json"])
        assert r.exit_code == 0, (args, r.output)
        out = lines(r.stdout)
        assert {o["command"] for o in out} == {args[0]} and out[-1]["exit_code"] == 0
        commands.append(args[0])
    folders = sorted(q.iterdir())
    assert [f.name.split("-", 1)[1] for f in folders] == [
        "roll",
        "retain",
    ]  # found by the registry below
    folder = folders[0]
    r = CliRunner().invoke(
        cli, ["quarantine", "restore", "--dry-run", "--format", "json", str(folder)]
    )
    assert [o["kind"] for o in lines(r.stdout)] == ["folder", "totals"]
    r = CliRunner().invoke(
        cli, ["quarantine", "prune", "--older-than", "0s", "--format", "json", str(d)]
    )
    pruned = lines(r.stdout)
    assert [o["kind"] for o in pruned] == ["folder"] * (len(pruned) - 1) + ["totals"]
    assert (
        pruned[-1]["folders"] == len(pruned) - 1 == len(folders) and pruned[-1]["freed_on_disk"] > 0
    )
    assert all(
        o["created"] < o["time"] and o["op"] in ("roll", "retain") for o in pruned[:-1]
    )  # the run's, the line's
    assert not any(p.exists() for p in q.iterdir() if not p.name.startswith("."))


# ------------------------------------------------------------------------------ point 8
def test_quarantine_list_finds_what_went_elsewhere_and_shows_a_removed_one_as_gone(
    tmp_path, state_dir
):
    d = copy(tmp_path)
    elsewhere = tmp_path / "big-disk" / "kafkalog-q"
    r = CliRunner().invoke(cli, [*RETAIN, "--quarantine", str(elsewhere), str(d)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["recover", "--topic", "txn", "--all", str(d)])  # the default place
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["quarantine", "list", "--format", "json", str(d)])
    rows = json.loads(r.stdout)
    places = {(row["op"], Path(row["folder"]).parent) for row in rows if row["entries"]}
    assert ("retain", elsewhere) in places
    # recover --all drops the snapshot at the new log start, as the broker's load does
    # (ProducerStateManager.truncateAndReload: offsets at or below the log start), in the default place
    assert places - {("retain", elsewhere)} == {
        ("recover", d.parent / ".kafkalog-quarantine" / d.name)
    }
    assert all(row["status"] == "kept" for row in rows)
    registry = json.loads((state_dir / "quarantines.json").read_text())
    assert registry["log_dirs"][os.path.realpath(d)]["cluster_id"] == "ytU2o_qzT-eCvGOTk9Y8iw"
    # the other disk's quarantine removed by hand: listed as gone, not a crash
    shutil.rmtree(elsewhere)
    r = CliRunner().invoke(cli, ["quarantine", "list", str(d)])
    assert r.exit_code == 0, r.output
    gone = [ln for ln in r.stdout.splitlines() if " gone " in ln]
    assert len(gone) == 1 and "retain" in gone[0] and str(elsewhere) in gone[0]


def test_a_log_dir_mounted_elsewhere_is_found_by_its_directory_id(tmp_path):
    d = copy(tmp_path)
    with open(d / "meta.properties", "a") as f:
        f.write("directory.id=7Jw6sTx1QZ2ppZAjbU5TDg\n")
    q = tmp_path / "q"
    assert CliRunner().invoke(cli, [*RETAIN, "--quarantine", str(q), str(d)]).exit_code == 0
    moved = tmp_path / "mnt" / "data"
    moved.parent.mkdir()
    d.rename(moved)
    rows = json.loads(
        CliRunner().invoke(cli, ["quarantine", "list", "--format", "json", str(moved)]).stdout
    )
    assert [r["op"] for r in rows] == ["retain"] and rows[0]["status"] == "kept"


def test_an_unwritable_state_dir_is_a_warning_never_a_failure(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("KAFKALOG_STATE_DIR", str(blocker / "state"))
    d = copy(tmp_path)
    r = CliRunner().invoke(cli, [*RETAIN, "--quarantine", str(tmp_path / "q"), str(d)])
    assert r.exit_code == 0, r.output
    (warning,) = r.stderr.splitlines()
    assert warning.startswith(
        f"kafkalog: warning: cannot record the quarantine in {blocker / 'state'}/quarantines.json"
    )
    assert "KAFKALOG_STATE_DIR" in warning
    assert len(list((tmp_path / "q").iterdir())) == 1  # the data was kept all the same


@pytest.mark.slow  # concurrent runs of the installed script
def test_runs_at_once_lose_no_entry(tmp_path, state_dir):
    log_dirs = [tmp_path / f"ld{i}" for i in range(8)]
    threads = [
        threading.Thread(target=quarantine_registry.record, args=(ld, tmp_path / "q" / f"f{i}"))
        for i, ld in enumerate(log_dirs)
    ]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from kafkalog_cli.storage "
                "import quarantine_registry as r; r.record(Path(sys.argv[1]), Path(sys.argv[2]))",
                str(ld),
                str(tmp_path / "p" / ld.name),
            ]
        )
        for ld in log_dirs
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.wait(timeout=60) == 0 for p in procs)
    registry = json.loads((state_dir / "quarantines.json").read_text())["log_dirs"]
    assert {Path(k).name: len(v["folders"]) for k, v in registry.items()} == {
        ld.name: 2 for ld in log_dirs
    }


def test_the_state_dir_defaults_to_xdg_state_home(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKALOG_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert quarantine_registry.state_dir() == tmp_path / "xdg" / "kafkalog"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert quarantine_registry.state_dir() == tmp_path / "home" / ".local" / "state" / "kafkalog"


@pytest.mark.parametrize("field", ENVELOPE)
def test_the_envelope_is_documented(field):
    man = (paths.MAN / "kafkalog.1").read_text()
    assert f".B {field}\n" in man
