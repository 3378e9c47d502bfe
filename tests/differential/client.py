"""The kafka-python side of the differential tests: runs under KAFKA_PY (not the project's
python), reads one JSON request on stdin, prints one JSON answer. Bootstrap address: argv[1].

Requests:
  {"op": "create", "topics": [{"name", "partitions", "configs"}]}
  {"op": "alter", "topic": NAME, "configs": {...}}               (IncrementalAlterConfigs SET)
  {"op": "produce", "jobs": [{"topic", "partition", "producer": {kafka-python options},
                              "batches": [{"records": [[key, value, ts, [[hk, hv]...]]...],
                                           "txn": null|"commit"|"abort"}]}]}
      keys/values/header values are latin-1 strings or null; ts null: the producer's clock
  {"op": "delete_records", "offsets": {"topic-p": offset}}        (DeleteRecords: the new log start offsets)
      -> {"topic-p": low watermark}
  {"op": "consume", "partitions": ["topic-p", ...]}
      -> {"topic-p": {"start": n, "end": n, "records": [[offset, ts, key_b64, value_b64,
                                                          [[hk, hv_b64]...]]...]}}
"""

import base64
import json
import sys
import time


def b(s):
    return None if s is None else s.encode("latin-1")


def b64(x):
    return None if x is None else base64.b64encode(x).decode("ascii")


def create(bs, req):
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=bs)
    a.create_topics(
        [
            NewTopic(t["name"], t.get("partitions", 1), 1, topic_configs=t.get("configs", {}))
            for t in req["topics"]
        ]
    )
    a.close()
    # leaders elected: metadata lists every partition with a leader
    from kafka import KafkaConsumer

    c = KafkaConsumer(bootstrap_servers=bs)
    for _ in range(100):
        if all(c.partitions_for_topic(t["name"]) for t in req["topics"]):
            break
        time.sleep(0.2)
    c.close()
    return {}


def alter(bs, req):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    a.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, req["topic"], configs=req["configs"])],
        incremental=True,
    )
    a.close()
    return {}


def produce(bs, req):
    from kafka import KafkaProducer

    out = []
    for job in req["jobs"]:
        opts = {
            "acks": "all",
            "linger_ms": 200,
            "enable_idempotence": False,
            **job.get("producer", {}),
        }
        p = KafkaProducer(bootstrap_servers=bs, **opts)
        if opts.get("transactional_id"):
            p.init_transactions()
        for batch in job["batches"]:
            if batch.get("txn"):
                p.begin_transaction()
            futs = [
                p.send(
                    job["topic"],
                    partition=job.get("partition", 0),
                    key=b(k),
                    value=b(v),
                    timestamp_ms=ts,
                    headers=[(hk, b(hv)) for hk, hv in (hs or [])],
                )
                for k, v, ts, hs in batch["records"]
            ]
            if batch.get("txn") == "commit":
                p.commit_transaction()
            elif batch.get("txn") == "abort":
                p.abort_transaction()
            else:
                p.flush()
            out.append(
                [f.get(timeout=60).offset for f in futs] if batch.get("txn") != "abort" else []
            )
        p.close()
    return {"offsets": out}


def delete_records(bs, req):
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    r = a.delete_records(
        {
            TopicPartition(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])): o
            for tp, o in req["offsets"].items()
        },
        timeout_ms=60000,
    )
    a.close()
    return {
        f"{tp.topic}-{tp.partition}": v.get("low_watermark") if isinstance(v, dict) else str(v)
        for tp, v in r.items()
    }


def consume(bs, req):
    from kafka import KafkaConsumer, TopicPartition

    out = {}
    for tp in req["partitions"]:
        t, p = tp.rsplit("-", 1)
        c = KafkaConsumer(
            bootstrap_servers=bs,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_uncommitted",
        )
        part = TopicPartition(t, int(p))
        c.assign([part])
        start = c.beginning_offsets([part])[part]
        end = c.end_offsets([part])[part]
        c.seek(part, start)
        recs = []
        deadline = time.monotonic() + 30
        while c.position(part) < end and time.monotonic() < deadline:
            for m in c.poll(timeout_ms=500).get(part, []):
                recs.append(
                    [
                        m.offset,
                        m.timestamp,
                        b64(m.key),
                        b64(m.value),
                        [[k, b64(v)] for k, v in (m.headers or [])],
                    ]
                )
        out[tp] = {"start": start, "end": end, "records": recs}
        c.close()
    return out


if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(
        json.dumps(
            {
                "create": create,
                "alter": alter,
                "produce": produce,
                "delete_records": delete_records,
                "consume": consume,
            }[request["op"]](sys.argv[1], request)
        )
    )
