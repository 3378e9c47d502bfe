"""The differential harness's own parts that need no broker: seeded damage is repeatable, and the
comparison takes the broker's leader election as the broker's epoch cache does."""

import random
import shutil

from tests.differential.compare import compare_log_dirs, epochs_match
from tests.differential.damage import damage_log_dir
from tests.differential.loadcheck import partition_dirs
from tests.helpers.paths import EXAMPLES


def _tree(d):
    return {str(f.relative_to(d)): f.read_bytes() for f in sorted(d.rglob("*")) if f.is_file()}


def test_a_seed_names_one_damage(tmp_path):
    trees, descs = [], []
    for i in range(2):
        d = tmp_path / str(i)
        shutil.copytree(EXAMPLES, d)
        descs.append(damage_log_dir(random.Random(42), d, partition_dirs(d)))
        trees.append(_tree(d))
    assert descs[0] == descs[1] and descs[0]["partitions"]
    assert trees[0] == trees[1] != _tree(EXAMPLES)


def test_leader_election_entry_is_taken_as_the_epoch_cache_assigns_it():
    assert epochs_match(b"0\n2\n0 0\n3 136\n", b"0\n1\n0 0\n")
    # a bogus epoch from a damaged header is removed by the broker's assign of a lower epoch
    assert epochs_match(b"0\n2\n0 0\n3 136\n", b"0\n2\n0 0\n10223616 128\n")
    assert not epochs_match(b"0\n2\n0 0\n3 136\n", b"0\n2\n0 0\n2 100\n")


def test_identical_dirs_compare_equal_and_a_changed_index_does_not(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(EXAMPLES, a)
    shutil.copytree(EXAMPLES, b)
    assert compare_log_dirs(a, b) == {}
    (b / "multi-segment-0" / f"{300:020d}.index").write_bytes(b"")
    diffs = compare_log_dirs(a, b)
    assert (
        list(diffs) == ["multi-segment-0"]
        and "00000000000000000300.index" in diffs["multi-segment-0"][0]
    )


def _campaign(cases, other=None):
    return {"cases": cases, "other": other or {}, "served": {n: {"start": 300} for n in cases}}


def test_a_remote_difference_counts_until_its_reason_is_checked(tmp_path):
    from tests.differential.deletions import explain, unexplained

    # the broker's remote log manager deleted segment 0; the broker started on kafkalog's result did not
    rem = {"broker": [150], "kafkalog": [0, 150], "after_load": [0, 150]}
    r = _campaign(
        {"t-time-0": {"differences": [], "remote": rem}},
        {
            "__remote_log_metadata-0": [
                "00000000000000000000.log: broker 3839 bytes, kafkalog 2775 bytes"
            ]
        },
    )
    explain(r, tmp_path)
    assert "explained" not in r["cases"]["t-time-0"]
    assert unexplained(r) == {"t-time-0": rem, "other": r["other"]}


def test_a_local_difference_beside_a_remote_one_is_never_explained_by_it(tmp_path):
    from tests.differential.deletions import explain, unexplained

    rem = {"broker": [150], "kafkalog": [0, 150], "after_load": [150]}
    r = _campaign(
        {
            "t-bytes-0": {
                "differences": ["only kafkalog has 00000000000000000300.log"],
                "remote": rem,
            },
            "t-plain-0": {"differences": []},
        }
    )
    explain(r, tmp_path)
    assert unexplained(r) == {"t-bytes-0": ["only kafkalog has 00000000000000000300.log"]}


def test_the_loader_damage_kinds_are_seeded_and_do_what_they_say(tmp_path):
    """index-less-cut, txnindex-below-base and log-start-beyond-end (the loader's own cases,
    kafkalog-recover(1)): one seed, one damage; each leaves what its name says."""
    from kafkalog_cli.formats.txnindex import load_sanity_check
    from kafkalog_cli.storage import checkpoints as ckpt
    from tests.differential.damage import DAMAGES, seg, segments

    for kind in ("index-less-cut", "txnindex-below-base", "log-start-beyond-end"):
        trees = []
        for i in range(2):
            d = tmp_path / f"{kind}-{i}"
            shutil.copytree(EXAMPLES, d)
            part = d / "multi-segment-0"
            what = DAMAGES[kind](random.Random(7), part)
            assert what, kind
            trees.append((what, _tree(d)))
        assert trees[0] == trees[1] and trees[0][1] != _tree(EXAMPLES), kind
        bases = segments(part)
        if kind == "index-less-cut":
            missing = [b for b in bases if not seg(part, b, ".index").exists()]
            assert len(missing) == 1 and missing[0] != bases[-1], what
        elif kind == "txnindex-below-base":
            corrupt = [
                b
                for b in bases
                if seg(part, b, ".txnindex").exists()
                and load_sanity_check(seg(part, b, ".txnindex").read_bytes(), b) is not None
            ]
            assert len(corrupt) == 1, what
        else:
            start = ckpt.read_offsets(d / "log-start-offset-checkpoint")[("multi-segment", 0)]
            assert start > 600, what  # multi-segment-0 ends at 600
