"""The answer to a question (:class:`Answer`): the stories it names (the first ``limit``
by seq), the key's seq_gap rows, and, when there is no story, why: the topic is not in the
report, the seq was never sent, or no anomaly names the message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .composing import Story, compose
from .reading import Published, rows
from .selecting import Query, gaps, select
from .text import jsonable


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
        return jsonable({
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
