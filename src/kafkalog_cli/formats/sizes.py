"""Kafka's fixed sizes of the log format, in one place for the batch walk (framing.py) and the
batch model (records.py), which both stand on them."""

LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: offset int64 + size int32
RECORD_OVERHEAD_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the minimum size of any entry
RECORD_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD: the v2 header
