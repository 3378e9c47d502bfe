"""Copy a chosen, small set of kafka-dump-log goldens and the files they dump from the corpus
(the folder given, else KAFKALOG_CORPUS: tests/corpus.py) into tests/fixtures/corpus (run once by
a developer; the tests never need the corpus). Each chosen target brings its segment siblings
and every golden variant of it."""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.corpus import corpus_path  # run as a script, from anywhere
from tests.helpers.paths import CORPUS as OUT

CORPUS = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else corpus_path().resolve()

PATTERNS = [
    "legacy/v0-",
    "legacy/v1-",
    "legacy/v2-empty-batch",
    "legacy/v2-headers",
    "legacy/v2-logappend",
    "legacy/v2-no-timestamp",
    "legacy/v2-txn",
    "legacy/v2-zstd",
    "broker/formats/basic/before/codec-",
    "broker/formats/basic/before/txn-0/",
    "broker/formats/basic/before/multi-segment-0/",
    "broker/formats/basic/before/__consumer_offsets-0/00000000000000000000.log",
    "broker/formats/basic/before/__transaction_state-0/00000000000000000000.log",
    "broker/formats/basic/before/__cluster_metadata-0/00000000000000000000.log",
    "broker/formats/basic/before/bootstrap.checkpoint",
    "broker/formats/basic/before/idempotent-lz4-0/",
    "broker/formats/basic/before/logappend-time-0/",
    "broker/formats/basic/before/compacted-0/",
    "broker/recover/tail-garbage/before/rec-none-0/00000000000000000725.log",
    "broker/recover/torn-tail/before/rec-lz4-idem-0/00000000000000000000.index",
    "broker/recover/unclean-kill/before/crash-idem-0/00000000000000000600.",
    "broker/recover/leftovers/before/rec-zstd-0/",
    "broker/retain/time/before/ret-time-blocker-0/00000000000000000192.",
    "broker/compact/keyed-overwrites/after/cmp-none-0/00000000000000000000.log",
    "wild/tulios__kafkajs/derived/v0_recordbatch_zstd.records/",
    "wild/Bheem6005__kafka/kafka-logs/__consumer_offsets-0/00000000000000000000.log",
    "wild/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/__transaction_state-44/00000000000000000000.log",
    "wild/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/bootstrap.checkpoint",
    "wild/xpxwo100__bullShit/tmp/kafka-logs/__consumer_offsets-40/00000000000000000000.log",
    "wild/ArthurArutunyan04__Backend_labs/kafka-data/__consumer_offsets-19/00000000000000258527.",
    "wild/segmentio__kafka-go/derived/",
    "wild/kafka-rust__kafka-rust/",
]
MAX_FILE = 200_000


def main() -> None:
    goldens = CORPUS / "goldens"
    if not goldens.is_dir():
        sys.exit(f"pick_goldens: no corpus at {CORPUS} (give its folder, or set KAFKALOG_CORPUS)")
    targets = set()
    for args in goldens.rglob("*.args"):
        rel = str(args.parent.relative_to(goldens))
        if any(rel.startswith(p) for p in PATTERNS):
            f = CORPUS / rel
            if f.is_file() and f.stat().st_size <= MAX_FILE:
                targets.add(rel)
    copied = 0
    for rel in sorted(targets):
        src = CORPUS / rel
        stem = src.name.split(".")[0]
        for sib in [src, *src.parent.glob(stem + ".*")]:
            if sib.is_file() and sib.stat().st_size <= MAX_FILE:
                dst = OUT / sib.relative_to(CORPUS)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(sib, dst)
        gdir = goldens / rel
        dst = OUT / "goldens" / rel
        dst.mkdir(parents=True, exist_ok=True)
        for g in gdir.iterdir():
            shutil.copy2(g, dst / g.name)
            copied += 1
    # preallocated index lengths the broker cases need
    for note in CORPUS.glob("broker/*/*/PREALLOCATED.txt"):
        lines = [
            line
            for line in note.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        keep = [
            line
            for line in lines
            if (OUT / note.parent.relative_to(CORPUS) / line.split(" ", 1)[1]).exists()
        ]
        if keep:
            d = OUT / note.parent.relative_to(CORPUS)
            (d / "PREALLOCATED.txt").write_text("\n".join(keep) + "\n")
    print(f"{len(targets)} targets, {copied} golden files into {OUT}")


if __name__ == "__main__":
    main()
