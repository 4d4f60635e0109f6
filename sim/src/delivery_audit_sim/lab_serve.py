"""`delivery-audit lab --serve`: the lab's broker on its own, for trying the auditor on your
own code (the README's "Audit your own system"). Starts librdkafka's mock Kafka cluster on
127.0.0.1, creates the topics, prints the bootstrap address (also written to
`workdir`/bootstrap.txt) and serves until Ctrl-C (SIGINT) or SIGTERM. Then, as the broker
side of the audit, it reads every topic back as `delivery-audit snapshot` does (every
partition up to its end offset, producer ids and transaction markers included) into
`workdir`/broker/<topic>.jsonl, the canonical broker rows, and stops. The mock cluster
keeps the log in memory only: nothing else is left once it stops."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from .lab_broker import MockCluster, dump_topic


def serve(workdir: Path, topics: list[str], partitions: int,
          stop: threading.Event | None = None, echo=print) -> dict[str, int]:
    """Serve until `stop` is set, Ctrl-C or SIGTERM; returns the rows dumped per topic."""
    stop = stop or threading.Event()
    workdir.mkdir(parents=True, exist_ok=True)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with MockCluster(brokers=1) as cluster:
            for topic in topics:
                cluster.create_topic(topic, partitions)
            (workdir / "bootstrap.txt").write_text(cluster.bootstrap + "\n", encoding="utf-8")
            echo(f"bootstrap servers: {cluster.bootstrap}")
            echo(f"topics: {', '.join(topics)} ({partitions} partitions each)")
            echo(f"serving; Ctrl-C stops and writes {workdir / 'broker'}/<topic>.jsonl")
            try:
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
            echo("reading the topics back (a snapshot up to the end offsets) …")
            counts = {t: dump_topic(cluster.bootstrap, t, workdir / "broker" / f"{t}.jsonl")
                      for t in topics}
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    for topic, n in counts.items():
        echo(f"broker rows: {n} in {workdir / 'broker' / (topic + '.jsonl')}")
    return counts


__all__ = ["serve"]
