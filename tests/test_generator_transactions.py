"""The exactly-once scenario (contract §9): its files follow the §9 input rules, its truth has
every transactional anomaly, agrees with the reference evaluator (also with the config's
transaction timeout taken away), is deterministic, and leaves the other scenarios' files as
they were.  No Spark here.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from reference_audit import comparable, reference_audit

from delivery_audit.config import load_config
from delivery_audit_sim.generator import generate_scenario

START = datetime(2024, 5, 1, tzinfo=UTC)
TXN_NAMES = ("aborted_read", "hanging_transaction", "zombie_write", "late_delivery")
TS_FIELDS = ("send_ts", "ack_ts", "timestamp", "started_ts", "finished_ts", "ts")


def _ms(s: str) -> int:
    return int(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000)


def _rows(out: Path, source: str) -> list[dict]:
    """A JSONL source's rows, timestamps as epoch ms (null fields are absent)."""
    rows = []
    for f in sorted((out / source).glob("part-*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            rows.append({k: _ms(v) if k in TS_FIELDS else v for k, v in r.items()})
    return rows


@pytest.fixture(scope="module")
def eos(tmp_path_factory) -> tuple[Path, dict, dict[str, list[dict]]]:
    d = tmp_path_factory.mktemp("eos")
    truth = generate_scenario("exactly-once", 700, 4, START, d)
    return d, truth, {s: _rows(d, s) for s in ("sends", "broker", "ledger", "events")}


def _by_partition(broker: list[dict]) -> dict[tuple, list[dict]]:
    parts: dict[tuple, list[dict]] = defaultdict(list)
    for r in broker:
        parts[(r["topic"], r["partition"])].append(r)
    for rows in parts.values():
        rows.sort(key=lambda r: r["offset"])
    return parts


def _outcomes(broker: list[dict]) -> dict[tuple, str]:
    """(topic, partition, offset) -> committed | aborted | open, for transactional data rows:
    the first marker of the same pid after the row (rule 21)."""
    out = {}
    for (t, p), rows in _by_partition(broker).items():
        for i, r in enumerate(rows):
            if not r.get("transactional") or "control" in r:
                continue
            nxt = next((x for x in rows[i + 1:] if "control" in x and x["pid"] == r["pid"]),
                       None)
            out[(t, p, r["offset"])] = "open" if nxt is None else (
                "committed" if nxt["control"] == "commit" else "aborted")
    return out


def test_broker_rows_follow_rule_20(eos):
    _, _, rows = eos
    broker = rows["broker"]
    controls = [r for r in broker if "control" in r]
    txn = [r for r in broker if r.get("transactional") and "control" not in r]
    assert controls and txn
    for r in controls:
        assert r["control"] in ("commit", "abort")
        assert "pid" in r and "producer_epoch" in r and r.get("transactional") is True
        assert "key" not in r and "seq" not in r
    for r in txn:
        assert "pid" in r and "producer_epoch" in r and "seq" in r
    # only the transactional topic has transactional rows; its offsets are dense (markers
    # hold offsets of their own)
    assert {r["topic"] for r in controls + txn} == {"transfers"}
    for (t, _p), rs in _by_partition(broker).items():
        offs = [r["offset"] for r in rs]
        assert offs == list(range(offs[0], offs[0] + len(offs))), t


def test_each_transactions_marker_follows_its_records(eos):
    _, _, rows = eos
    for (_t, _p), rs in _by_partition(rows["broker"]).items():
        waiting: dict[int, list[dict]] = defaultdict(list)   # pid -> data rows awaiting a marker
        for r in rs:
            if "control" in r:
                # a marker closes the rows of its pid before it, and comes after them in time
                assert all(d["timestamp"] < r["timestamp"] for d in waiting.pop(r["pid"], []))
            elif r.get("transactional"):
                waiting[r["pid"]].append(r)
    outcome = _outcomes(rows["broker"])
    assert set(outcome.values()) == {"committed", "aborted", "open"}


def test_sends_of_transactional_producers(eos):
    _, _, rows = eos
    outcome = _outcomes(rows["broker"])
    marker_ts = {}
    for (t, p), rs in _by_partition(rows["broker"]).items():
        for i, r in enumerate(rs):
            if r.get("transactional") and "control" not in r:
                nxt = next((x for x in rs[i + 1:] if "control" in x and x["pid"] == r["pid"]),
                           None)
                if nxt is not None:
                    marker_ts[(t, p, r["offset"])] = nxt["timestamp"]
    statuses = set()
    for s in rows["sends"]:
        statuses.add(s["status"])
        if s["status"] == "aborted":
            assert "transactional_id" in s and "offset" not in s
        if "transactional_id" not in s:
            assert s["status"] == "acked" and s["topic"] == "payments"
            continue
        assert s["topic"] == "transfers" and s["idempotent"] is True
        if s["status"] == "acked":   # logged once the transaction committed
            at = (s["topic"], s["partition"], s["offset"])
            assert outcome[at] == "committed"
            assert s["ack_ts"] > marker_ts[at]
    assert {"acked", "aborted", "timeout"} <= statuses


def test_isolation_levels_in_the_ledger(eos):
    d, _, rows = eos
    outcome = _outcomes(rows["broker"])
    parts = _by_partition(rows["broker"])
    open_first = {}
    for (t, p, o), oc in sorted(outcome.items()):
        if oc == "open":
            open_first.setdefault((t, p), o)
    assert len(open_first) == 2                 # the hanging and the recent transaction
    read = {"settlement": defaultdict(int), "audit-export": defaultdict(int)}
    for r in rows["ledger"]:
        if r["topic"] != "transfers":
            assert r["group_id"] == "settlement" and "isolation" not in r
            continue
        oc = outcome[(r["topic"], r["partition"], r["offset"])]
        read[r["group_id"]][oc] += 1
        if r["group_id"] == "audit-export":
            assert r["isolation"] == "read_uncommitted" and "seq" not in r
        else:
            assert "isolation" not in r and oc == "committed"
            # stuck at the last stable offset: nothing at or after an open transaction
            assert r["offset"] < open_first.get((r["topic"], r["partition"]), 2**62)
    assert read["audit-export"]["aborted"] and read["audit-export"]["open"]
    assert read["settlement"]["committed"] and not read["settlement"]["aborted"]
    # a marker is never processed
    markers = {(t, p, r["offset"]) for (t, p), rs in parts.items() for r in rs if "control" in r}
    assert not any((r["topic"], r["partition"], r["offset"]) in markers for r in rows["ledger"])
    cfg = load_config(d / "config.yaml")
    assert {g.group_id: g.get("isolation.level") for g in cfg.groups} == {
        "settlement": "read_committed", "audit-export": "read_uncommitted"}
    assert {g.group_id: g.get("latency_sla_ms") for g in cfg.groups} == {
        "settlement": 60_000, "audit-export": 30_000}
    assert cfg.raw["transaction_timeout_ms"] == 120_000


def test_zombie_rows_land_below_a_newer_epoch(eos):
    _, _, rows = eos
    zombies = 0
    for rs in _by_partition(rows["broker"]).values():
        best: dict[int, int] = {}
        for r in rs:
            if "pid" not in r:
                continue
            if "control" not in r and r["producer_epoch"] < best.get(r["pid"], -1):
                zombies += 1
            best[r["pid"]] = max(best.get(r["pid"], -1), r["producer_epoch"])
    assert zombies == eos[1]["anomalies"]["zombie_write"] > 0


def test_truth_has_every_transactional_anomaly(eos):
    _, truth, _ = eos
    a = truth["anomalies"]
    assert all(a[n] > 0 for n in TXN_NAMES), a
    assert a["hanging_transaction"] == 1        # one hanging; the recent one is not
    assert truth["by_cause"]["aborted_read"] == {
        "read_uncommitted": a["aborted_read"], "read_committed": 0, "unknown": 0}
    # aborted copies are not copies: re-sent after abort is neither a duplicate nor lost
    inj = truth["injected"]
    assert a["dup_write"] == inj["zombie_fencing"]["zombie_records"]
    assert a["lost_unacked"] == inj["txn_abort_lost"]["aborted_records"]
    assert a["write_reorder"] == a["seq_gap"] == a["key_partition_split"] == 0
    st = {g: v["states"] for g, v in truth["groups"].items()}
    assert st["settlement"]["pending"] > 0 and st["audit-export"]["pending"] == 0
    assert st["settlement"]["skipped"] == st["audit-export"]["skipped"] == 0
    for g in truth["groups"].values():
        assert sum(g["states"].values()) == g["judged"]


def test_reference_agrees_and_the_timeout_setting_matters(eos, tmp_path):
    d, truth, _ = eos
    res = reference_audit(d, truth["window"]["start"], truth["window"]["end"])
    assert comparable(res) == comparable(truth)
    # with Kafka's default 60 s, the recent open transaction (80-100 s) would hang as well
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    del cfg["transaction_timeout_ms"]
    res = reference_audit(d, truth["window"]["start"], truth["window"]["end"], config=cfg)
    assert res["anomalies"]["hanging_transaction"] == 2
    # without latency SLAs nothing is late
    for g in cfg["groups"].values():
        del g["latency_sla_ms"]
    res = reference_audit(d, truth["window"]["start"], truth["window"]["end"], config=cfg)
    assert res["anomalies"]["late_delivery"] == 0


def test_reference_agrees_on_parquet_and_other_seeds(tmp_path):
    for n, seed, fmt in ((400, 9, "parquet"), (2500, 5, "jsonl")):
        d = tmp_path / f"{seed}"
        truth = generate_scenario("exactly-once", n, seed, START, d, fmt=fmt)
        res = reference_audit(d, truth["window"]["start"], truth["window"]["end"])
        assert comparable(res) == comparable(truth), (n, seed, fmt)
    schema = pq.read_schema(next((tmp_path / "9" / "broker").glob("*.parquet")))
    assert schema.field("transactional").type == "bool" and "control" in schema.names


def test_deterministic_for_a_seed(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    ta = generate_scenario("exactly-once", 500, 42, START, a)
    assert generate_scenario("exactly-once", 500, 42, START, b) == ta
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    tc = generate_scenario("exactly-once", 500, 43, START, c)
    assert tc != ta
    assert (a / "broker/part-00000.jsonl").read_bytes() != (c / "broker/part-00000.jsonl") \
        .read_bytes()


def test_mixed_eos_adds_transactions_to_mixed(tmp_path):
    truth = generate_scenario("mixed-eos", 2000, 7, START, tmp_path / "me")
    a = truth["anomalies"]
    # every anomaly but late_delivery (no SLA there: mixed's groups have late episodes)
    assert all(v > 0 for n, v in a.items() if n != "late_delivery"), a
    assert a["late_delivery"] == 0
    # audit-export is read_uncommitted, shipping keeps the default (no setting: unknown), and
    # one aborted transaction reaches billing although it is read_committed (a fault)
    causes = truth["by_cause"]["aborted_read"]
    assert all(causes.values()) and sum(causes.values()) == a["aborted_read"], causes
    cfg = load_config(tmp_path / "me" / "config.yaml")
    assert cfg.group("billing").get("isolation.level") == "read_committed"
    assert cfg.group("shipping").get("isolation.level") is None
    assert all("transfers" in cfg.group(g).topics for g in ("billing", "shipping"))
    res = reference_audit(tmp_path / "me", truth["window"]["start"], truth["window"]["end"])
    assert comparable(res) == comparable(truth)


def test_other_scenarios_write_no_transactional_fields(tmp_path):
    truth = generate_scenario("mixed", 400, 1, START, tmp_path / "m", fmt="parquet")
    for source, extra in (("sends", "transactional_id"), ("broker", "transactional"),
                          ("broker", "control"), ("ledger", "isolation")):
        for f in (tmp_path / "m" / source).glob("*.parquet"):
            assert extra not in pq.read_schema(f).names, (source, extra)
    assert not set(TXN_NAMES) & set(truth["anomalies"]) - set(_catalogue())
    assert "aborted_read" not in truth["by_cause"]
    cfg = yaml.safe_load((tmp_path / "m" / "config.yaml").read_text())
    assert "transaction_timeout_ms" not in cfg
    assert json.loads((tmp_path / "m" / "truth.json").read_text()) == truth


def _catalogue() -> tuple[str, ...]:
    from delivery_audit.anomalies import ANOMALY_NAMES
    return ANOMALY_NAMES
