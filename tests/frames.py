"""Tiny canonical DataFrames for rule tests: rows are dicts, times are 'HH:MM:SS' on the
audited day (2026-11-19) or full ISO strings."""

from __future__ import annotations

from datetime import UTC, datetime

from delivery_audit.schemas import FIELDS, canonical_schema
from delivery_audit.spark import local_frame

DAY = "2026-11-19"
START, END = f"{DAY}T00:00:00Z", "2026-11-20T00:00:00Z"


def ts(text: str | None) -> datetime | None:
    if text is None:
        return None
    if len(text) <= 12:  # a time of day on the audited day
        text = f"{DAY}T{text}Z"
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(
        tzinfo=None)


def frame(spark, source: str, rows: list[dict]):
    names = [f.name for f in FIELDS[source]]
    kinds = {f.name: f.kind for f in FIELDS[source]}
    data = []
    for r in rows:
        unknown = set(r) - set(names)
        assert not unknown, f"unknown {source} fields {unknown}"
        data.append(tuple(ts(r.get(n)) if kinds[n] == "timestamp" else r.get(n) for n in names))
    return local_frame(spark, data, canonical_schema(source))  # as the engine makes them


class Log:
    """Builds the four sources of a small scenario."""

    def __init__(self) -> None:
        self.sends: list[dict] = []
        self.broker: list[dict] = []
        self.ledger: list[dict] = []
        self.events: list[dict] = []

    def send(self, seq, at="10:00:00", topic="t", key="k", status="acked", partition=0,
             offset=None, **extra):
        row = dict(send_ts=at, topic=topic, key=key, seq=seq, status=status, **extra)
        if status == "acked":
            row.update(partition=partition, offset=seq if offset is None else offset)
        self.sends.append(row)
        return self

    def write(self, seq, offset=None, at="10:00:01", topic="t", key="k", partition=0,
              **extra):
        self.broker.append(dict(topic=topic, partition=partition,
                                offset=seq if offset is None else offset, key=key, seq=seq,
                                timestamp=at, **extra))
        return self

    def marker(self, offset, control, pid, epoch=0, at="10:00:01", topic="t", partition=0):
        """A transaction marker (contract §9): a control row of pid at offset."""
        self.broker.append(dict(topic=topic, partition=partition, offset=offset,
                                timestamp=at, control=control, pid=pid,
                                producer_epoch=epoch, transactional=True))
        return self

    def process(self, offset, at="10:00:02", done="10:00:03", group="g", member="m1",
                outcome="success", topic="t", partition=0, **extra):
        self.ledger.append(dict(group_id=group, member_id=member, topic=topic,
                                partition=partition, offset=offset, started_ts=at,
                                finished_ts=done, outcome=outcome, **extra))
        return self

    def event(self, event, at, group="g", member="m1", topic="t", partition=0, **extra):
        self.events.append(dict(group_id=group, member_id=member, ts=at, event=event,
                                topic=topic, partition=partition, **extra))
        return self

    def message(self, seq, offset=None, topic="t", key="k", partition=0, at="10:00:00",
                group="g", member="m1"):
        """A healthy message: sent, acked, written and processed once."""
        o = seq if offset is None else offset
        self.send(seq, at=at, topic=topic, key=key, partition=partition, offset=o)
        self.write(seq, offset=o, topic=topic, key=key, partition=partition)
        self.process(o, topic=topic, partition=partition, group=group, member=member)
        return self

    def frames(self, spark) -> dict:
        return {s: frame(spark, s, getattr(self, s)) for s in ("sends", "broker", "ledger",
                                                              "events")}
