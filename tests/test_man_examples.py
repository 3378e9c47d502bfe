"""Issue 26, point 11: every command in the EXAMPLES of the man pages runs as written, with local
fixtures in place of its paths and URLs: a copy of examples/logdir for the broker's log dir (with
an `orders-3` partition and a `__consumer_offsets-7`), a server.properties, a quarantine folder a
real run made. Each runs through /bin/sh with the installed `kafkalog`; a crontab line runs with
cron's own PATH (/usr/bin:/bin), so a line that relies on kafkalog being on the PATH fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import EXAMPLES, MAN, SCHEMAS

KAFKALOG = shutil.which("kafkalog", path=str(Path(sys.executable).parent)) or shutil.which(
    "kafkalog"
)
CRON_PATH = "/usr/bin:/bin"
CRON_LINE = re.compile(r"^(\S+\s+){5}(?=\S)")


def examples(page: Path) -> list[str]:
    """The commands of the page's EXAMPLES, as a reader copies them: roff escapes undone,
    continuation lines joined, comments and blank lines left out."""
    text = page.read_text()
    if ".SH EXAMPLES" not in text:
        return []
    section = text.split(".SH EXAMPLES", 1)[1].split("\n.SH", 1)[0]
    lines, out = [], []
    for raw in section.splitlines():
        if raw.startswith("."):
            continue
        line = re.sub(r"\\f[A-Z]", "", raw).replace("\\-", "-").replace("\\e", "\\")
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + line.lstrip()
        else:
            lines.append(line)
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def _sandbox(tmp: Path) -> dict[str, str]:
    data = tmp / "var" / "lib" / "kafka" / "data"
    shutil.copytree(EXAMPLES, data, symlinks=True)
    shutil.copytree(EXAMPLES / "__consumer_offsets-0", data / "__consumer_offsets-7")
    archive = tmp / "mnt" / "kafka-archive" / "data"
    shutil.copytree(EXAMPLES, archive, symlinks=True)
    props = tmp / "etc" / "kafka" / "server.properties"
    props.parent.mkdir(parents=True)
    props.write_text("log.retention.hours=168\nlog.retention.bytes=-1\nlog.cleanup.policy=delete\n")
    (data / "server.properties").write_text(props.read_text())
    with open(props, "a") as f:  # doctor's example reads its log dirs from it
        f.write(f"node.id=1\nprocess.roles=broker,controller\nlog.dirs={data}\n")
    # compare-replicas: the copies of other brokers (the same records: they agree)
    replicas = {}
    for name in ("broker1", "broker2", "backup/b1/data", "backup/b2/data", "backup/b3/data"):
        replicas[name] = tmp / "replicas" / name
        shutil.copytree(EXAMPLES, replicas[name], symlinks=True)
    # move-partition: a second log dir of the same broker, without the partition
    disk1, disk2 = tmp / "data" / "disk1" / "kafka", tmp / "data" / "disk2" / "kafka"
    shutil.copytree(EXAMPLES, disk1, symlinks=True)
    disk2.mkdir(parents=True)
    shutil.copy(EXAMPLES / "meta.properties", disk2 / "meta.properties")
    (data / "offsets.json").write_text(
        '{"partitions": [{"topic": "codec-none", "partition": 0, "offset": 10}]}'
    )
    for d in (
        "out",
        "log",
        "shared-out",
        "home/.local/share/bash-completion/completions",
        "home/.config/fish/completions",
    ):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    return {
        "/usr/local/bin/kafkalog": KAFKALOG,
        "broker1/": f"{replicas['broker1']}/",
        "broker2/": f"{replicas['broker2']}/",
        **{f"/{k}": str(v) for k, v in replicas.items() if k.startswith("backup/")},
        "/data/disk1/kafka": str(disk1),
        "/data/disk2/kafka": str(disk2),
        "--partition 3": "--partition 0",
        "/var/lib/kafka/.kafkalog-quarantine": str(
            tmp / "var" / "lib" / "kafka" / ".kafkalog-quarantine"
        ),
        "/var/lib/kafka/data": str(data),
        "/mnt/kafka-archive/data": str(archive),
        "/etc/kafka/server.properties": str(props),
        "/var/log/": str(tmp / "log") + "/",
        "/data/kafka-parquet": str(tmp / "out" / "kafka-parquet"),
        "/data/last-week": str(tmp / "out" / "last-week"),
        "/var/lib/kafka/meta": str(data),
        "orders-app": "oracle-group",  # the sample dir's consumer group
        "--at-offset 1200": "--at-offset 200",  # within the sample dir's metadata log
        "/shared/kafka": str(data),
        "/shared/out": str(tmp / "shared-out" / "out"),
        "spark://m:7077": "local[1]",
        " data/": f" {data}/",
        "--files 00000000000000000000.log": f"--files {data / 'codec-none-0' / '00000000000000000000.log'}",
        # the pages' topic `orders` and its partition 3: a topic of the sample dir, known to its
        # __cluster_metadata as a real broker's topic is
        "orders-3": "codec-none-0",
        "orders:": "codec-none:",
        "'orders*'": "'codec-none*'",
        "--topic orders": "--topic codec-none",
        '"topic": "orders"': '"topic": "codec-none"',
        '"partition": 3': '"partition": 0',
        "user-42": "k042",
        "--before 1500000": "--before 20",
    }


def substitute(command: str, subs: dict[str, str]) -> str:
    """Every key of `subs` replaced in one pass, the longest first where they overlap."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(subs, key=len, reverse=True)))
    return pattern.sub(lambda m: subs[m.group(0)], command)


def _quarantine_folder(tmp: Path, data: str) -> str:
    """A folder a real retain run left, for the restore examples."""
    r = subprocess.run(
        [
            KAFKALOG,
            "delete-records",
            data,
            "--topic",
            "codec-none",
            "--partition",
            "0",
            "--before",
            "20",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    root = Path(data).parent / ".kafkalog-quarantine" / "data"
    (folder,) = sorted(root.iterdir())
    return str(folder)


PAGES = sorted(p.name for p in MAN.glob("*.1") if examples(p))


def test_the_pages_have_examples():
    assert {
        "kafkalog-retain.1",
        "kafkalog-quarantine.1",
        "kafkalog-dump-log.1",
        "kafkalog-export.1",
    } <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_every_example_runs_as_written(page, tmp_path):
    if KAFKALOG is None:
        pytest.skip("the kafkalog command is not installed")
    subs = _sandbox(tmp_path)
    data = subs["/var/lib/kafka/data"]
    if page == "kafkalog-schemas.1":  # the Schema Registry's topic (of another cluster: doctor
        # would refuse it), and a dir of its REST answers
        shutil.copytree(SCHEMAS / "logdir" / "_schemas-0", Path(data) / "_schemas-0")
        shutil.copytree(SCHEMAS / "files" / "rest", Path(data) / "registry-export")
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    env["PATH"] = f"{Path(KAFKALOG).parent}{os.pathsep}{env.get('PATH', CRON_PATH)}"
    failures = []
    for command in examples(MAN / page):
        if "restore" in command and ".kafkalog-quarantine" in command:
            folder = (
                _quarantine_folder(tmp_path, data) if "--dry-run" in command else _last_folder(data)
            )
            command = re.sub(
                r"/var/lib/kafka/\.kafkalog-quarantine/data/\S+", "@QUARANTINE@", command
            )
            subs = dict(subs, **{"@QUARANTINE@": folder})
        if (
            " zsh" in command
            and not shutil.which("zsh")
            or " fish" in command
            and not shutil.which("fish")
        ):
            continue  # a shell this machine does not have
        if "--engine spark" in command and not (
            shutil.which("java") or os.environ.get("JAVA_HOME")
        ):
            continue
        run_env = env
        cron = CRON_LINE.match(command) and command.split()[0][0] in "0123456789*@"
        if cron:
            command = CRON_LINE.sub("", command)
            run_env = dict(env, PATH=CRON_PATH)  # what cron gives a job
        command = substitute(command, subs)
        command = re.sub(r"^python ", f"{sys.executable} ", command)
        r = subprocess.run(
            ["bash" if "eval" in command else "/bin/sh", "-c", command],
            cwd=data,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        # 1 is an answer, not a failure (the one exit-code table: a dry run with changes pending,
        # problems or findings reported)
        if r.returncode not in (0, 1) or "Traceback" in r.stderr:
            failures.append(
                f"{'(cron) ' if cron else ''}{command}\n  exit {r.returncode}: {r.stderr.strip()[-600:]}"
            )
    assert not failures, "\n".join(failures)


def _last_folder(data: str) -> str:
    root = Path(data).parent / ".kafkalog-quarantine" / "data"
    return str(sorted(root.iterdir())[-1])


def test_a_crontab_line_relying_on_path_fails_as_cron_runs_it(tmp_path):
    """What the test above catches: the old retain line, without --server-properties and with a
    bare `kafkalog`, fails under cron's PATH (127) and, given the command, exits 7 on KRaft."""
    if KAFKALOG is None:
        pytest.skip("the kafkalog command is not installed")
    subs = _sandbox(tmp_path)
    old = "kafkalog retain --no-quarantine --format json /var/lib/kafka/data || [ $? -eq 5 ]"
    env = dict(os.environ, PATH=CRON_PATH)
    r = subprocess.run(
        ["/bin/sh", "-c", old.replace("/var/lib/kafka/data", subs["/var/lib/kafka/data"])],
        env=env,
        capture_output=True,
        text=True,
    )
    if shutil.which("kafkalog", path=CRON_PATH) is None:
        assert r.returncode != 0 and "not found" in r.stderr
    r = subprocess.run(
        [
            "/bin/sh",
            "-c",
            old.replace("kafkalog", KAFKALOG, 1).replace(
                "/var/lib/kafka/data", subs["/var/lib/kafka/data"]
            ),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "retention.ms are unknown (no --server-properties" in r.stderr
