"""``remediation/commands.txt``: the concrete commands and settings where they apply.

* **Offset resets** for skipped records: per (group, topic, partition) with ``skipped``
  rows, ``kafka-consumer-groups.sh … --reset-offsets --to-offset O --dry-run`` with O the
  first skipped offset, and the ranges of consecutive skipped offsets it covers. Review the
  dry run, stop the group's consumers (a reset applies to an inactive group only), then run
  it with ``--execute``; every record from O to the group's position is processed again.
* **Consumer settings** from the rebalance advice (contract §5): each setting the advice
  says to change, with its arithmetic.
* **Producer settings** where the anomalies name their cause: ``enable.idempotence=true``
  for duplicates from producer retries, ``acks=all`` (and the topic's
  ``min.insync.replicas``) for acknowledged messages the broker lost.

Every data value in a command is shell-quoted (``$'…'`` when it holds a control
character); in a ``#`` comment, control characters are shown escaped, so no value can
start a line of its own.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

BOOTSTRAP = "<BOOTSTRAP>"
MAX_RANGES_SHOWN = 5


def printable(value: Any) -> str:
    """``value`` as text on one line: control and other non-printable characters escaped."""
    s = str(value)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in s)


def shell_arg(value: str) -> str:
    """One shell word for ``value``: POSIX quoting, or bash's ``$'…'`` for control
    characters (a quoted line break would split the command over lines)."""
    if all(c.isprintable() for c in value):
        return shlex.quote(value)
    body = "".join("\\\\" if c == "\\" else "\\'" if c == "'" else
                   c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in value)
    return f"$'{body}'"


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for o in offsets:
        if runs and o == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], o)
        elif not runs or o > runs[-1][1]:
            runs.append((o, o))
    return runs


def offset_resets(anomalies: pa.Table,
                  reach: dict[tuple[str, str, int], int] | None = None) -> list[dict[str, Any]]:
    """Per (group, topic, partition) with skipped records: ``to_offset`` (the first skipped
    offset), ``skipped`` (records), ``ranges`` ([first, last] of consecutive offsets), and
    ``reached`` (the highest offset the group processed or committed, when known)."""
    rows = anomalies.filter(pc.and_(pc.equal(anomalies["anomaly"], "skipped"),
                                    pc.is_valid(anomalies["offset"])))
    per: dict[tuple[str, str, int], set[int]] = defaultdict(set)
    for r in rows.select(["group_id", "topic", "partition", "offset"]).to_pylist():
        if r["group_id"] is None or r["topic"] is None or r["partition"] is None:
            continue
        per[(r["group_id"], r["topic"], int(r["partition"]))].add(int(r["offset"]))
    out = []
    for (group, topic, part), offsets in sorted(per.items()):
        ordered = sorted(offsets)
        out.append({"group_id": group, "topic": topic, "partition": part,
                    "to_offset": ordered[0], "skipped": len(ordered),
                    "ranges": [list(r) for r in _runs(ordered)],
                    "reached": (reach or {}).get((group, topic, part))})
    return out


def reset_command(r: dict[str, Any], bootstrap: str = BOOTSTRAP) -> str:
    """The dry run of one partition's reset (see the module docstring)."""
    topic_partition = f"{r['topic']}:{int(r['partition'])}"
    return (f"kafka-consumer-groups.sh --bootstrap-server {bootstrap} "
            f"--group {shell_arg(r['group_id'])} --topic {shell_arg(topic_partition)} "
            f"--reset-offsets --to-offset {int(r['to_offset'])} --dry-run")


def config_changes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The rebalance advice's changes: per group, each setting it says to change."""
    out = []
    for group, r in sorted((report.get("rebalances") or {}).items()):
        if not isinstance(r, dict):
            continue
        for a in r.get("advice") or []:
            if isinstance(a, dict) and a.get("ok") is False and a.get("advised") is not None:
                out.append({"group_id": group, "setting": a.get("setting"),
                            "current": a.get("current"), "advised": a.get("advised"),
                            "reason": a.get("reason")})
    return out


def producer_changes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Producer and topic settings the anomalies' causes call for (see the docstring)."""
    anomalies = report.get("anomalies") or {}
    out = []
    dup = anomalies.get("dup_write") or {}
    retry = int((dup.get("by_cause") or {}).get("producer_retry") or 0)
    if retry:
        topics = sorted(t for t, n in (dup.get("by_topic") or {}).items() if n)
        out.append({"settings": ["enable.idempotence=true", "acks=all"], "topics": topics,
                    "reason": f"{retry:,} extra broker copies from producer retries without "
                              "idempotence (dup_write, cause producer_retry)"})
    lost = anomalies.get("lost_acked") or {}
    if int(lost.get("count") or 0):
        topics = sorted(t for t, n in (lost.get("by_topic") or {}).items() if n)
        out.append({"settings": ["acks=all"], "topic_settings": [
                        "min.insync.replicas=2", "unclean.leader.election.enable=false"],
                    "topics": topics,
                    "reason": f"{int(lost['count']):,} acknowledged messages the broker does "
                              "not have (lost_acked): an ack without every in-sync replica"})
    return out


def _files_line(summary: dict[str, Any], name: str) -> str:
    s = summary.get(name) or {}
    counts = ", ".join(f"{k} {v:,}" for k, v in (s.get("by_anomaly") or {}).items())
    return (f"# {s.get('csv')} (and {s.get('parquet')}): {int(s.get('rows') or 0):,} rows"
            + (f" ({counts})" if counts else ""))


def commands_text(report: dict[str, Any], summary: dict[str, Any],
                  resets: list[dict[str, Any]], changes: list[dict[str, Any]],
                  producer: list[dict[str, Any]]) -> str:
    """The text of ``commands.txt``."""
    window = report.get("window") or {}
    verdict = (report.get("verdict") or {}).get("verdict") if isinstance(
        report.get("verdict"), dict) else report.get("verdict")
    lines = [
        f"# Remediation for window {printable(window.get('id', '?'))} "
        f"({printable(window.get('start', '?'))} to {printable(window.get('end', '?'))}), "
        f"verdict {printable(verdict or '?')}",
        "# Written by delivery-audit from the anomaly table. Nothing here runs by itself:",
        f"# review every line, replace {BOOTSTRAP} with your brokers, and run what applies.",
        "",
        "# 1. Messages to re-produce or re-process",
        _files_line(summary, "replay"),
        "#   action re-produce: the broker never had them (lost_acked, lost_unacked) or",
        "#   retention deleted them before the group read them (expired_unconsumed);",
        "#   action re-process: still in the log, the group went past them (skipped): see 2.",
        "",
        "# 2. Offset resets for skipped records (one per group and partition)",
    ]
    if resets:
        lines += [
            "#   Run each with --dry-run first and review the new offsets. A reset applies",
            "#   only while the group has no active member: stop its consumers, replace",
            "#   --dry-run with --execute, restart them. Every record from the new offset to",
            "#   the group's position is processed again: compensate with the dedupe list",
            "#   or make the processing idempotent.",
        ]
        for r in resets:
            ranges = r["ranges"]
            shown = ", ".join(f"{a}" if a == b else f"{a}-{b}"
                              for a, b in ranges[:MAX_RANGES_SHOWN])
            more = f" and {len(ranges) - MAX_RANGES_SHOWN} more" if len(
                ranges) > MAX_RANGES_SHOWN else ""
            lines.append(f"# group {printable(r['group_id'])}, {printable(r['topic'])} "
                         f"[{r['partition']}]: {r['skipped']:,} skipped record(s) at offsets "
                         f"{shown}{more}")
            if r.get("reached") is not None and r["reached"] >= r["to_offset"]:
                again = int(r["reached"]) - int(r["to_offset"]) + 1
                lines.append(f"#   the group reached offset {int(r['reached']):,}: the reset "
                             f"processes about {again:,} records again")
            lines.append(reset_command(r))
    else:
        lines.append("#   none: no skipped record.")
    lines += ["", "# 3. Consumer settings (the rebalance advice)"]
    if changes:
        for c in changes:
            lines.append(f"# group {printable(c['group_id'])}: {printable(c['reason'])}")
            lines.append(f"{printable(c['setting'])}={printable(c['advised'])}"
                         f"    # currently {printable(c['current'])}")
    else:
        lines.append("#   none: every advised setting is already safe.")
    lines += ["", "# 4. Producer and topic settings"]
    if producer:
        emitted: set[str] = set()
        for p in producer:
            topics = ", ".join(printable(t) for t in p.get("topics") or [])
            lines.append(f"# {printable(p['reason'])}" + (f"; topics: {topics}" if topics
                                                          else ""))
            for line in [f"{s}    # producer" for s in p["settings"]] + [
                    f"{s}    # topic" for s in p.get("topic_settings") or []]:
                lines.append(line if line not in emitted else f"#   {line} (as above)")
                emitted.add(line)
    else:
        lines.append("#   none.")
    lines += ["", "# 5. Extra copies and processings to compensate downstream",
              _files_line(summary, "dedupe"),
              "#   dup_write: extra broker copies; redelivery: records a group processed",
              "#   again; dup_effect: messages a group processed more than once (one row per",
              "#   extra processing: compensate each once).", ""]
    return "\n".join(lines)
