"""``delivery-audit explain``: the story of one message or record, told from a published
report folder alone (pyarrow and the report's JSON; no Spark).

A story is one identity (topic, key, seq) with its send attempts, its broker copies, every
processing by every judged group (member, times, outcome), the anomaly rows that name it
with their evidence, and what happened in its groups around it: the group events on its
partitions (the evidence table's ``events`` rows), the rebalances of report.json's
timeline that touched its partitions, and the evictions. A rebalance is tied to two
processings of a group the way the report links redeliveries to rebalances
(rebalance/linking.py): it began before the later one, and no more than
``max.poll.interval.ms`` before the earlier one.

Where it reads: ``evidence/`` (detection/evidence_table.py: the source rows of the
identities the anomalies name, and their groups' events), ``anomalies/`` and
``report.json``, from a folder or ``s3://`` (through the manifest, every file checked
against its sha256). A message that no anomaly names is not in the evidence: that is said
plainly, not shown as an empty story.

Size: one command's whole story of one record (lookup, every source's rows, the rules'
reasoning, the rendering); the reasoning reads the evidence columns the rendering prints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .anomalies import PER_ANOMALY
from .core.timefmt import instant, iso_z

SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "info": 3}
KIND_RANK = {"send": 0, "broker": 1, "event": 2, "eviction": 3, "rebalance": 4,
             "processing": 5}


class ExplainError(ValueError):
    """The report cannot be read, or the question is malformed."""


# -- reading --------------------------------------------------------------------------

@dataclass
class Published:
    """What explain reads of a published report folder."""

    location: str
    report: dict[str, Any]
    anomalies: Any  # pyarrow.Table
    evidence: Any | None  # pyarrow.Table; None: published before the evidence table


def _table(blobs: list[bytes]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(pa.BufferReader(b)) for b in blobs]
    return _utc(pa.concat_tables(tables, promote_options="permissive")) if tables else None


def _utc(table: Any) -> Any:
    """Every timestamp column as microseconds in UTC (Spark writes INT96: naive, ns)."""
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(
                pa.timestamp("us", tz="UTC")))
    return table


def load(location: str) -> Published:
    """The report folder at ``location``: a local directory or ``s3://bucket/prefix``."""
    if location.startswith(("s3://", "s3a://")):
        return _load_s3(location)
    folder = Path(location)
    if not (folder / "report.json").is_file():
        raise ExplainError(f"{location} is not a report folder (no report.json)")

    def parts(name: str) -> list[bytes]:
        return [p.read_bytes() for p in sorted((folder / name).glob("*.parquet"))]

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return Published(location, report, _table(parts("anomalies")), _table(parts("evidence")))


def _load_s3(uri: str) -> Published:
    from .core.manifest import MANIFEST, Manifest
    from .core.s3uri import split_s3
    from .storage.retry import MISSING_CODES, error_code, with_retry
    from .storage.s3 import make_s3_client

    bucket, prefix = split_s3(uri)
    prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
    client = make_s3_client()

    def get(key: str) -> bytes:
        return with_retry(f"get s3://{bucket}/{key}", lambda: client.get_object(
            Bucket=bucket, Key=key)["Body"].read())

    try:
        manifest = Manifest.parse(get(prefix + MANIFEST))
    except Exception as exc:  # noqa: BLE001 - botocore's error classes are dynamic
        if error_code(exc) in MISSING_CODES:
            raise ExplainError(f"no published report at {uri} (no {MANIFEST})") from None
        raise
    blobs: dict[str, bytes] = {}
    for f in manifest.files:
        if f.path == "report.json" or f.path.split("/")[0] in ("anomalies", "evidence") \
                and f.path.endswith(".parquet"):
            data = get(prefix + f.path)
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise ExplainError(f"{uri}/{f.path} differs from its manifest entry: the "
                                   "report is being replaced; try again")
            blobs[f.path] = data
    if "report.json" not in blobs:
        raise ExplainError(f"no report.json in the manifest of {uri}")

    def parts(name: str) -> list[bytes]:
        return [b for p, b in sorted(blobs.items()) if p.startswith(name + "/")]

    return Published(uri, json.loads(blobs["report.json"]), _table(parts("anomalies")),
                     _table(parts("evidence")))


# -- selecting ------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    """A message by (topic, key[, seq]) or a record by (topic, partition, offset)."""

    topic: str
    key: str | None = None
    seq: int | None = None
    partition: int | None = None
    offset: int | None = None

    def describe(self) -> str:
        if self.key is not None:
            seq = f" seq {self.seq}" if self.seq is not None else ""
            return f"key {self.key!r}{seq} of topic {self.topic}"
        return f"record {self.topic}:{self.partition}@{self.offset}"


def parse_partition(text: str) -> tuple[str, int]:
    """``TOPIC:PARTITION`` (a topic may hold ':'; the last one splits)."""
    topic, sep, part = text.rpartition(":")
    if not sep or not topic or not part.isdigit():
        raise ExplainError(f"--partition takes TOPIC:PARTITION, not {text!r}")
    return topic, int(part)


def rows(table: Any, **equal: Any) -> list[dict[str, Any]]:
    """The rows of a pyarrow table whose columns equal the given values (None: no filter)."""
    import pyarrow.compute as pc

    if table is None:
        return []
    mask = None
    for name, value in equal.items():
        if value is None:
            continue
        m = pc.fill_null(pc.equal(table[name], value), False)
        mask = m if mask is None else pc.and_(mask, m)
    return (table if mask is None else table.filter(mask)).to_pylist()


Identity = tuple[str, str | None, int]  # (topic, key, seq)


def select(pub: Published, q: Query) -> tuple[list[Identity], list[Identity]]:
    """The identities a query names: (those with rows in the evidence, those only the
    anomaly table names), each sorted by seq. A record names the identities of the rows at
    its (topic, partition, offset)."""
    if q.key is not None:
        found = rows(pub.evidence, topic=q.topic, key=q.key, seq=q.seq)
        named = rows(pub.anomalies, topic=q.topic, key=q.key, seq=q.seq)
    else:
        at = dict(topic=q.topic, partition=q.partition, offset=q.offset)
        found, named = rows(pub.evidence, **at), rows(pub.anomalies, **at)
    in_evidence = {(r["topic"], r["key"], r["seq"]) for r in found
                   if r["source"] != "events" and r["seq"] is not None}
    only_named = {(r["topic"], r["key"], r["seq"]) for r in named
                  if r["seq"] is not None and r["anomaly"] != "seq_gap"} - in_evidence

    def order(i: Identity) -> tuple:
        return (i[0], i[1] is not None, i[1] or "", i[2])

    return sorted(in_evidence, key=order), sorted(only_named, key=order)


def gaps(pub: Published, q: Query) -> list[dict[str, Any]]:
    """The key's seq_gap rows (with ``seq``: the one holding it): seq values never sent."""
    if q.key is None:
        return []
    out = rows(pub.anomalies, anomaly="seq_gap", topic=q.topic, key=q.key)
    if q.seq is not None:
        out = [r for r in out if r["seq"] <= q.seq <= (r["seq_to"] or r["seq"])]
    return sorted(out, key=lambda r: r["seq"])


# -- composing ------------------------------------------------------------------------

@dataclass
class Story:
    topic: str
    key: str | None
    seq: int
    sends: list[dict[str, Any]] = field(default_factory=list)
    copies: list[dict[str, Any]] = field(default_factory=list)
    processings: list[dict[str, Any]] = field(default_factory=list)  # with "n" per group
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    other_events: list[dict[str, Any]] = field(default_factory=list)  # counted per kind
    note: str | None = None

    def timeline(self) -> list[dict[str, Any]]:
        """Everything that has a time, in time order: at, kind, what, who, where, detail."""
        out: list[dict[str, Any]] = []
        for s in self.sends:
            detail = []
            if s["end_ts"]:
                detail.append(f"{'ack' if s['status'] == 'acked' else 'answer'} at "
                              f"{_clock(s['end_ts'])}")
            if s["detail"]:
                detail.append(f"error {s['detail']}")
            if s["idempotent"] is not None:
                detail.append("idempotent" if s["idempotent"] else "not idempotent")
            attempt = f" attempt {s['attempt']}" if s["attempt"] is not None else ""
            out.append(_entry(s["ts"], "send", f"send{attempt}: {s['status']}",
                              s["producer_id"], _where(s), detail))
        for c in self.copies:
            # a transactional copy's outcome (contract §9), from the evidence's status
            txn = [f"transaction {c['status']}"] if c.get("status") else []
            out.append(_entry(c["ts"], "broker", "written to the log", c["producer_id"],
                              _where(c), txn))
        for p in self.processings:
            detail = [f"until {_clock(p['end_ts'])} ({_ms(p['ts'], p['end_ts'])})"
                      if p["end_ts"] else "no finish recorded"]
            if p["generation"] is not None:
                detail.append(f"generation {p['generation']}")
            out.append(_entry(p["ts"], "processing", f"{p['group_id']} processing #{p['n']}: "
                              f"{p['status']}", p["member_id"], _where(p), detail))
        for e in self.events:
            detail = [f"generation {e['generation']}"] if e["generation"] is not None else []
            if e["detail"]:
                detail.append(e["detail"])
            out.append(_entry(e["ts"], "event", f"{e['group_id']}: {e['status']}",
                              e["member_id"], _where(e), detail))
        for o in self.other_events:
            out.append(_entry(o["first"], "event", f"{o['group_id']}: {o['n']} {o['status']} "
                              "at other offsets", ", ".join(o["members"]), "",
                              [f"until {_clock(o['last'])}"]))
        for r in self.rebalances:
            who = [f"out: {', '.join(r['members_out'])}"] if r.get("members_out") else []
            if r.get("members_in"):
                who.append(f"in: {', '.join(r['members_in'])}")
            detail = [f"until {_clock(instant(r['end']))} ({r['duration_ms']:,} ms)",
                      r.get("trigger") or ""]
            if r.get("relation"):
                detail.append(r["relation"])
            gen = f" → generation {r['generation']}" if r.get("generation") is not None else ""
            out.append(_entry(instant(r["start"]), "rebalance",
                              f"{r['group_id']}: rebalance{gen}", "; ".join(who), "",
                              [d for d in detail if d]))
        for v in self.evictions:
            out.append(_entry(instant(v["left_at"]), "eviction",
                              f"{v['group_id']}: {v['member_id']} evicted "
                              f"({v.get('diagnosis') or 'no diagnosis'})", v["member_id"], "",
                              [v.get("evidence") or ""]))
        return sorted(out, key=lambda e: (e["at"] is None, e["at"] or _EPOCH,
                                          KIND_RANK[e["kind"]]))

    def to_json(self) -> dict[str, Any]:
        return _jsonable({
            "topic": self.topic, "key": self.key, "seq": self.seq, "note": self.note,
            "sends": self.sends, "copies": self.copies, "processings": self.processings,
            "anomalies": self.anomalies, "events": self.events,
            "rebalances": self.rebalances, "evictions": self.evictions,
            "other_events": self.other_events, "timeline": self.timeline()})


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _entry(at: datetime | None, kind: str, what: str, who: str | None, where: str,
           detail: list[str]) -> dict[str, Any]:
    return {"at": at, "kind": kind, "what": what, "who": who or "", "where": where,
            "detail": "; ".join(d for d in detail if d)}


def _where(r: dict[str, Any]) -> str:
    if r.get("partition") is None:
        return ""
    at = f"@{r['offset']}" if r.get("offset") is not None else ""
    return f"{r['topic']}-{r['partition']}{at}"




def _clock(dt: datetime | None) -> str:
    if dt is None:
        return "—"
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _ms(a: datetime, b: datetime) -> str:
    return f"{(b - a) / timedelta(milliseconds=1):,.0f} ms"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_z(value, "milliseconds")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def compose(pub: Published, identity: Identity, around: timedelta) -> Story:
    """The story of one identity: its rows, its anomalies, and its groups' events,
    rebalances and evictions from ``around`` before its first to ``around`` after its last
    instant."""
    topic, key, seq = identity
    mine = [r for r in rows(pub.evidence, topic=topic, seq=seq) if r["key"] == key]
    story = Story(topic, key, seq)
    story.sends = sorted((r for r in mine if r["source"] == "sends"),
                         key=lambda r: (r["ts"] or _EPOCH, r["attempt"] or 0))
    story.copies = sorted((r for r in mine if r["source"] == "broker"),
                          key=lambda r: (r["partition"], r["offset"]))
    processed = sorted((r for r in mine if r["source"] == "ledger"),
                       key=lambda r: (r["group_id"], r["ts"] or _EPOCH, r["member_id"]))
    counts: dict[str, int] = {}
    for p in processed:
        counts[p["group_id"]] = counts.get(p["group_id"], 0) + 1
        story.processings.append({**p, "n": counts[p["group_id"]]})
    story.anomalies = sorted(
        (r for r in rows(pub.anomalies, topic=topic, seq=seq) if r["key"] == key
         and r["anomaly"] != "seq_gap"),
        key=lambda r: (SEVERITY_RANK.get(r["severity"], 9), r["anomaly"],
                       r["group_id"] or "", r["ts"] or _EPOCH))
    if not mine:
        story.note = ("the anomalies name this message, but the published evidence holds "
                      f"none of its rows (it keeps those of the first {PER_ANOMALY:,} rows "
                      "of each anomaly)")
    instants = [t for r in [*mine, *story.anomalies] for t in (r.get("ts"), r.get("end_ts"),
                                                             r.get("related_ts")) if t]
    if not instants:
        return story
    lo, hi = min(instants) - around, max(instants) + around
    groups = sorted({r["group_id"] for r in [*processed, *story.anomalies] if r["group_id"]})
    partitions = {r["partition"] for r in mine if r["partition"] is not None} | {
        r["partition"] for r in story.anomalies if r["partition"] is not None}
    # an event at an offset (commit_failed) tells of this record at its offset or the next
    # (a commit names the next offset to read); the others are counted, not listed
    near = {(r["partition"], r["offset"] + d) for r in mine
            if r["partition"] is not None and r["offset"] is not None for d in (0, 1)}
    others: dict[tuple[str, str], dict[str, Any]] = {}
    for e in sorted((e for e in rows(pub.evidence, source="events")
                     if e["group_id"] in groups and e["ts"] is not None and lo <= e["ts"] <= hi
                     and (e["partition"] is None
                          or (e["topic"] == topic and e["partition"] in partitions))),
                    key=lambda e: (e["ts"], e["group_id"], e["member_id"] or "")):
        if e["offset"] is None or (e["partition"], e["offset"]) in near:
            story.events.append(e)
            continue
        o = others.setdefault((e["group_id"], e["status"]), {
            "group_id": e["group_id"], "status": e["status"], "n": 0, "first": e["ts"],
            "members": []})
        o["n"] += 1
        o["last"] = e["ts"]
        if e["member_id"] not in o["members"]:
            o["members"].append(e["member_id"])
    story.other_events = list(others.values())
    for g in groups:
        section = (pub.report.get("rebalances") or {}).get(g) or {}
        mine_g = [p for p in story.processings if p["group_id"] == g]
        interval = ((section.get("settings") or {}).get("max.poll.interval.ms") or {}) \
            .get("value")
        for r in section.get("timeline") or []:
            start, end = instant(r["start"]), instant(r["end"]) or instant(r["start"])
            names = set(r.get("partitions") or [])
            touches = not names or "…" in names or any(
                f"{topic}-{p}" in names for p in partitions)
            if start and end >= lo and start <= hi and touches:
                story.rebalances.append({"group_id": g, **r,
                                         "relation": _relation(start, mine_g, interval)})
        story.evictions += [{"group_id": g, **v} for v in section.get("evictions") or []
                            if (t := instant(v.get("left_at"))) and lo <= t <= hi]
    return story


def _relation(start: datetime, processings: list[dict[str, Any]],
              interval_ms: int | None) -> str | None:
    """How a rebalance stands to a group's processings of the message: between two of them
    (or linked to them as the report links redeliveries), or none."""
    slack = timedelta(milliseconds=interval_ms or 0)
    ordered = [p for p in processings if p["ts"] is not None]
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a["ts"] <= start <= b["ts"]:
            return (f"between processing #{a['n']} by {a['member_id']} and #{b['n']} by "
                    f"{b['member_id']}")
        if a["ts"] - slack <= start <= b["ts"]:
            return (f"linked to processings #{a['n']} by {a['member_id']} and #{b['n']} by "
                    f"{b['member_id']} (it began {_ms(start, a['ts'])} before #{a['n']})")
    return None


# -- answering ------------------------------------------------------------------------

@dataclass
class Answer:
    query: Query
    location: str
    window: dict[str, Any]
    stories: list[Story]
    matched: int  # identities found (stories holds the first ``limit`` of them)
    gaps: list[dict[str, Any]] = field(default_factory=list)  # the key's seq_gap rows
    message: str | None = None  # why there is no story, or what was left out

    @property
    def found(self) -> bool:
        return bool(self.stories)

    def to_json(self) -> dict[str, Any]:
        q = self.query
        return _jsonable({
            "report": self.location,
            "window": {k: self.window.get(k) for k in ("start", "end")},
            "query": {"topic": q.topic, "key": q.key, "seq": q.seq, "partition": q.partition,
                      "offset": q.offset},
            "found": self.found, "matched": self.matched, "shown": len(self.stories),
            "message": self.message, "seq_gaps": self.gaps,
            "stories": [s.to_json() for s in self.stories]})


def explain(pub: Published, q: Query, around: timedelta = timedelta(minutes=5),
            limit: int = 5) -> Answer:
    """The stories a query names (the first ``limit`` by seq; 0: all), or why there is
    none."""
    window = pub.report.get("window") or {}
    span = f"{window.get('start', '?')} → {window.get('end', '?')}"
    in_evidence, only_named = select(pub, q)
    found = sorted(in_evidence + only_named, key=lambda i: i[2])
    answer = Answer(q, pub.location, window, [], len(found), gaps=gaps(pub, q))
    if not found:
        topics = set(pub.report.get("judged_by_topic") or {})
        if q.topic not in topics and not rows(pub.anomalies, topic=q.topic):
            answer.message = (f"topic {q.topic} is not in this report (window {span}; its "
                              f"topics: {', '.join(sorted(topics)) or 'none'})")
        elif answer.gaps and q.seq is not None:
            answer.message = (f"{q.describe()} was never sent: seq_gap "
                              f"({answer.gaps[0]['detail']})")
        else:
            answer.message = (
                f"{q.describe()} was not involved in any anomaly of this window ({span}), "
                "so the published evidence holds none of its rows: the report keeps the "
                "source rows of the messages its anomalies name, and no others"
                + (" (its key has seq_gap rows only)" if answer.gaps else ""))
        return answer
    shown = found if limit <= 0 else found[:limit]
    answer.stories = [compose(pub, i, around) for i in shown]
    if len(shown) < len(found):
        answer.message = (f"{len(found)} messages match; the first {len(shown)} by seq are "
                          "shown (pick one with --seq, or --limit 0 for all)")
    elif pub.evidence is None:
        answer.message = ("this report has no evidence table (published before `explain` "
                          "existed): only its anomaly rows are shown")
    return answer


# -- printing -------------------------------------------------------------------------

SEQUENCED = ("redelivery", "dup_effect", "retry_after_failure")  # related member came first
# what a §9 anomaly's related offset and instant are (detection/transactions.py)
RELATED_OFFSET = {"aborted_read": "aborting marker", "zombie_write": "newer epoch first",
                  "hanging_transaction": "last record"}
RELATED_TS = {"aborted_read": "written", "late_delivery": "first processed",
              "hanging_transaction": "partition's last record"}


def _evidence_text(a: dict[str, Any]) -> str:
    parts = []
    member, related = a.get("member_id"), a.get("related_member_id")
    if member and related and a["anomaly"] in SEQUENCED:
        parts.append(f"{related} then {member}")
    elif member or related:
        parts.append(", ".join(x for x in (member and f"member {member}",
                                           related and f"related member {related}") if x))
    if a.get("partition") is not None:
        parts.append(f"at {a['topic']}-{a['partition']}@{a['offset']}")
    rp, ro = a.get("related_partition"), a.get("related_offset")
    if rp is not None or ro is not None:
        where = f"{a['topic']}-{rp}" if rp is not None else "offset"
        label = RELATED_OFFSET.get(a["anomaly"], "related")
        parts.append(f"{label} {where}{'@' if rp is not None else ' '}{ro}"
                     if ro is not None else f"related partition {rp}")
    if a.get("ts"):
        label = RELATED_TS.get(a["anomaly"], "related")
        rel = f" ({label} {_clock(a['related_ts'])})" if a.get("related_ts") else ""
        parts.append(f"{_clock(a['ts'])}{rel}")
    if a.get("attempts") is not None:
        parts.append(f"{a['attempts']} attempts")
    if a.get("detail"):
        parts.append(a["detail"])
    return "; ".join(parts)


DETAIL_CHARS = 120  # of a timeline row's detail on screen (--json has it whole)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def render(answer: Answer, console: Any) -> None:
    """The answer as rich text: per story a header, a timeline and the anomalies."""
    from rich.markup import escape
    from rich.table import Table

    w = answer.window
    console.print(f"[bold]report[/] {escape(answer.location)}   window {w.get('start')} → "
                  f"{w.get('end')}", highlight=False)
    if not answer.found:
        console.print(f"[bold yellow]{escape(answer.message or 'nothing found')}[/]",
                      highlight=False)
        return
    for s in answer.stories:
        groups = sorted({p["group_id"] for p in s.processings})
        members = sorted({p["member_id"] for p in s.processings})
        console.rule(f"[bold]{escape(s.topic)}[/] · key [bold]{escape(str(s.key))}[/] · "
                     f"seq [bold]{s.seq}[/]")
        names = ", ".join(dict.fromkeys(
            a["anomaly"] + (f" ({a['cause']})" if a.get("cause") else "")
            for a in s.anomalies)) or "none"
        console.print(
            f"{_count(len(s.sends), 'send attempt')} · "
            f"{_count(len(s.copies), 'broker copy', 'broker copies')} · "
            f"{_count(len(s.processings), 'processing')} by {', '.join(groups) or 'no group'}"
            f"{' (' + ', '.join(members) + ')' if members else ''} · anomalies: {names}",
            highlight=False, markup=False)
        if s.note:
            console.print(f"[yellow]{escape(s.note)}[/]")
        timeline = Table("time (UTC)", "what", "who", "where", "detail", title="timeline",
                         title_justify="left", expand=False)
        styles = {"rebalance": "bold magenta", "eviction": "bold red", "processing": "cyan",
                  "event": "dim"}
        for e in s.timeline():
            detail = e["detail"] if len(e["detail"]) <= DETAIL_CHARS \
                else e["detail"][:DETAIL_CHARS - 1] + "…"
            timeline.add_row(_clock(e["at"]), escape(e["what"]), escape(e["who"]),
                             escape(e["where"]), escape(detail), style=styles.get(e["kind"]))
        console.print(timeline)
        if s.anomalies:
            table = Table("anomaly", "severity", "group", "cause", "evidence",
                          title="anomalies", title_justify="left")
            for a in s.anomalies:
                table.add_row(a["anomaly"], a["severity"], escape(a["group_id"] or "—"),
                              escape(a["cause"] or "—"), escape(_evidence_text(a)),
                              style="bold red" if a["severity"] == "critical" else None)
            console.print(table)
        for r in s.rebalances:
            if r.get("relation"):
                console.print(f"[bold magenta]{escape(r['group_id'])}: the rebalance at "
                              f"{_clock(instant(r['start']))} ({escape(r.get('trigger') or '')})"
                              f" lies {escape(r['relation'])}[/]", highlight=False)
    for g in answer.gaps:
        console.print(f"seq_gap of key {escape(str(g['key']))}: seq {g['seq']}"
                      f"{'–' + str(g['seq_to']) if g['seq_to'] not in (None, g['seq']) else ''}"
                      f" never sent ({escape(g['detail'] or '')})", highlight=False)
    if answer.message:
        console.print(f"[yellow]{escape(answer.message)}[/]", highlight=False)
