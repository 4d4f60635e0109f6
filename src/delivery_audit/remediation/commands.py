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
* **Transactions** (contract §9): per hanging transaction, ``kafka-transactions.sh …
  find-hanging --topic T --partition P`` to confirm it and ``… abort --topic T --partition P
  --start-offset O`` (O its first offset, the last stable offset it pins; the syntax of
  Kafka's tools/TransactionsCommand.java, brokers 3.0 and later); per group with aborted
  reads, ``isolation.level=read_committed`` when it reads uncommitted (or says nothing),
  the facts to escalate when it already reads committed; per fenced producer whose write
  landed (zombie_write), its pid and epochs and what to fix.

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

from ..txn_evidence import txn_rows

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


def find_hanging_command(topic: str, partition: int, bootstrap: str = BOOTSTRAP) -> str:
    """``kafka-transactions.sh … find-hanging`` limited to one partition (it also takes
    ``--broker-id`` to search every partition a broker hosts)."""
    return (f"kafka-transactions.sh --bootstrap-server {bootstrap} find-hanging "
            f"--topic {shell_arg(str(topic))} --partition {int(partition)}")


def abort_command(topic: str, partition: int, start_offset: int,
                  bootstrap: str = BOOTSTRAP) -> str:
    """``kafka-transactions.sh … abort`` of the transaction starting at ``start_offset``."""
    return (f"kafka-transactions.sh --bootstrap-server {bootstrap} abort "
            f"--topic {shell_arg(str(topic))} --partition {int(partition)} "
            f"--start-offset {int(start_offset)}")


def hanging_transactions(anomalies: pa.Table) -> list[dict[str, Any]]:
    """The hanging_transaction rows' evidence (txn_evidence.py), by place."""
    rows = [r for r in txn_rows(anomalies, "hanging_transaction")
            if r["topic"] is not None and r["partition"] is not None
            and r["first_offset"] is not None]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["first_offset"]))


def transaction_advice(anomalies: pa.Table) -> dict[str, Any]:
    """What the §9 anomaly rows call for: ``hanging`` (hanging_transactions), ``isolation``
    (per group and isolation cause: aborted reads, with up to 3 examples' pid, epoch and
    marker offset), ``zombies`` (per (topic, partition, pid): records, epochs, where the
    newer epoch wrote first)."""
    isolation: dict[tuple[str, str], dict[str, Any]] = {}
    for r in txn_rows(anomalies, "aborted_read"):
        if r["group_id"] is None:
            continue
        cause = r.get("isolation") or "unknown"
        e = isolation.setdefault((r["group_id"], cause), {
            "group_id": r["group_id"], "cause": cause, "reads": 0, "examples": []})
        e["reads"] += 1
        if len(e["examples"]) < 3:
            e["examples"].append(r)
    zombies: dict[tuple[str, int, int | None], dict[str, Any]] = {}
    for r in txn_rows(anomalies, "zombie_write"):
        z = zombies.setdefault((str(r["topic"]), int(r["partition"] or 0), r["pid"]), {
            "topic": r["topic"], "partition": r["partition"], "pid": r["pid"], "records": 0,
            "epochs": set(), "newer_epoch": r.get("newer_epoch"),
            "newer_offset": r.get("newer_offset"), "offsets": []})
        z["records"] += 1
        if r["epoch"] is not None:
            z["epochs"].add(r["epoch"])
        if r["offset"] is not None:
            z["offsets"].append(r["offset"])
        if r.get("newer_epoch") is not None and (z["newer_epoch"] is None
                                                 or r["newer_epoch"] > z["newer_epoch"]):
            z["newer_epoch"], z["newer_offset"] = r["newer_epoch"], r.get("newer_offset")
    return {"hanging": hanging_transactions(anomalies),
            "isolation": [isolation[k] for k in sorted(isolation)],
            "zombies": [{**z, "epochs": sorted(z["epochs"]), "offsets": sorted(z["offsets"])}
                        for _, z in sorted(zombies.items(), key=lambda kv: str(kv[0]))]}


def _transaction_lines(txn: dict[str, Any]) -> list[str]:
    """Section 6 of commands.txt (see the module docstring)."""
    lines: list[str] = []
    hanging = txn.get("hanging") or []
    if hanging:
        lines += [
            "#   Hanging transactions: each pins its partition's last stable offset, so",
            "#   read_committed consumers stop there. Confirm with find-hanging (it also",
            "#   takes --broker-id <id> to search a whole broker), then abort it: its records",
            "#   are dropped for read_committed consumers (re-produce them if they matter).",
        ]
        for h in hanging:
            age = f", open for {h['age_ms'] / 1000:,.1f} s" if h.get("age_ms") is not None else ""
            lines.append(
                f"# {printable(h['topic'])} [{h['partition']}]: pid {printable(h['pid'])} "
                f"epoch {printable(h['epoch'])}, {printable(h['records'])} record(s) at "
                f"offsets {h['first_offset']}-{printable(h['last_offset'])} since "
                f"{printable(h['ts'])}{age}; last stable offset {h['first_offset']}")
            lines.append(find_hanging_command(h["topic"], h["partition"]))
            lines.append(abort_command(h["topic"], h["partition"], h["first_offset"]))
    for i in txn.get("isolation") or []:
        g = printable(i["group_id"])
        if i["cause"] == "read_committed":
            lines.append(f"# group {g}: {i['reads']:,} aborted read(s) with "
                         "isolation.level=read_committed: a client or broker fault, not a "
                         "setting. Escalate (client and broker versions) with:")
            for e in i["examples"]:
                lines.append(f"#   {printable(e['topic'])} [{e['partition']}] offset "
                             f"{printable(e['offset'])}: pid {printable(e['pid'])} epoch "
                             f"{printable(e['epoch'])}, aborted by the marker at offset "
                             f"{printable(e['marker_offset'])}")
        else:
            said = ("reads uncommitted" if i["cause"] == "read_uncommitted"
                    else "does not say its isolation level (the default is read_uncommitted)")
            lines.append(f"# group {g}: {i['reads']:,} aborted read(s); the group {said}")
            lines.append(f"isolation.level=read_committed    # consumer, group {g}")
    for z in txn.get("zombies") or []:
        epochs = ", ".join(str(e) for e in z["epochs"]) or "?"
        lines.append(
            f"# {printable(z['topic'])} [{z['partition']}]: pid {printable(z['pid'])} wrote "
            f"{z['records']:,} record(s) with epoch {printable(epochs)} after epoch "
            f"{printable(z['newer_epoch'])} had written at offset {printable(z['newer_offset'])}:"
            " a fenced producer's write landed.")
    if txn.get("zombies"):
        lines += [
            "#   A fenced producer must stop: on ProducerFencedException (or",
            "#   InvalidProducerEpochException) close the producer and do not send with it",
            "#   again; give each live instance its own transactional.id.",
        ]
    return lines or ["#   none."]


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
                  producer: list[dict[str, Any]], txn: dict[str, Any] | None = None) -> str:
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
              "#   extra processing: compensate each once).", "",
              "# 6. Transactions (hanging transactions, aborted reads, fenced producers)",
              *_transaction_lines(txn or {}), ""]
    return "\n".join(lines)
