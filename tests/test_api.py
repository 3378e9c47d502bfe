import kafkalog_cli
from tests.helpers import paths


def test_the_public_api_reads_a_partition():
    p = kafkalog_cli.Partition.open(paths.EXAMPLES / "multi-segment-0")
    offsets = [r.offset for _, b in p.batches(from_offset=250, to_offset=260) for r in b.records()]
    assert offsets[0] == 250 and 260 in offsets
    assert set(kafkalog_cli.__all__) >= {
        "iter_batches",
        "Partition",
        "build_v2_batch",
        "__version__",
    }
