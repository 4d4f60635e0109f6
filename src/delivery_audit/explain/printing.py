"""An answer printed as rich text: per story a header, its timeline and its anomalies
(each anomaly's evidence in one line, its related offset and instant named per anomaly),
then the rebalances tied to its processings and the key's seq_gap rows."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from ..core.timefmt import instant
from .answering import Answer
from .text import clock

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
        rel = f" ({label} {clock(a['related_ts'])})" if a.get("related_ts") else ""
        parts.append(f"{clock(a['ts'])}{rel}")
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
            timeline.add_row(clock(e["at"]), escape(e["what"]), escape(e["who"]),
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
                              f"{clock(instant(r['start']))} ({escape(r.get('trigger') or '')})"
                              f" lies {escape(r['relation'])}[/]", highlight=False)
    for g in answer.gaps:
        console.print(f"seq_gap of key {escape(str(g['key']))}: seq {g['seq']}"
                      f"{'–' + str(g['seq_to']) if g['seq_to'] not in (None, g['seq']) else ''}"
                      f" never sent ({escape(g['detail'] or '')})", highlight=False)
    if answer.message:
        console.print(f"[yellow]{escape(answer.message)}[/]", highlight=False)
