"""The fault-scenario generator: API, determinism, structure, and agreement of its truth with an
independent brute-force reference evaluator of the contract (tests/reference_audit.py).

No Spark here; everything runs on small sizes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from reference_audit import comparable, reference_audit

from delivery_audit.anomalies import ANOMALY_NAMES, DUP_WRITE_CAUSES, REDELIVERY_CAUSES, STATES
from delivery_audit.config import load_config
from delivery_audit_sim.generator import DEFAULT_RATES, SCENARIOS, generate_scenario

START = datetime(2024, 5, 1, tzinfo=UTC)
SOURCES = ("sends", "broker", "ledger", "events")
EXPECTED_NONZERO = {
    "clean": set(),
    "rebalance-storm": {"redelivery", "dup_effect", "concurrent_processing"},
    "producer-retry": {"dup_write", "dup_effect", "write_reorder"},
    "broker-loss": {"lost_acked", "lost_unacked", "written_despite_failure", "seq_gap"},
    "consumer-loss": {"skipped", "pending", "expired_unconsumed", "process_reorder",
                      "key_partition_split", "retry_after_failure", "redelivery", "dup_effect"},
    "exactly-once": {"aborted_read", "hanging_transaction", "zombie_write", "late_delivery",
                     "lost_unacked", "written_despite_failure", "dup_write", "dup_effect",
                     "pending"},
    "mixed-eos": {"aborted_read", "hanging_transaction", "zombie_write", "redelivery",
                  "lost_acked", "skipped", "expired_unconsumed", "concurrent_processing"},
}
# contract §9: a transactional scenario's truth names these too (appended if the engine's
# catalogue does not have them yet)
TXN_NAMES = ("aborted_read", "hanging_transaction", "zombie_write", "late_delivery")


def _ms(s: str) -> int:
    return int(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000)


def _rows(out: Path, source: str) -> list[dict]:
    rows = []
    for f in sorted((out / source).glob("part-*")):
        if f.suffix == ".parquet":
            for r in pq.read_table(f).to_pylist():
                rows.append({k: (int(v.timestamp() * 1000) if isinstance(v, datetime) else v)
                             for k, v in r.items() if v is not None})
        else:
            for line in f.read_text().splitlines():
                r = json.loads(line)
                for k in ("send_ts", "ack_ts", "timestamp", "started_ts", "finished_ts", "ts"):
                    if k in r:
                        r[k] = _ms(r[k])
                rows.append(r)
    return rows


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    base = tmp_path_factory.mktemp("scenarios")
    out = {}
    for sc in SCENARIOS:
        d = base / sc
        out[sc] = (d, generate_scenario(sc, 500, 3, START, d))
    return out


def test_api_and_truth_format(generated):
    assert SCENARIOS == ("clean", "rebalance-storm", "producer-retry", "broker-loss",
                         "consumer-loss", "mixed", "exactly-once", "mixed-eos")
    for sc, (d, truth) in generated.items():
        assert json.loads((d / "truth.json").read_text()) == truth
        assert set(truth) == {"scenario", "seed", "messages", "window", "judged", "anomalies",
                              "by_cause", "groups", "injected"}
        assert truth["scenario"] == sc and truth["seed"] == 3 and truth["messages"] == 500
        assert truth["window"] == {"start": "2024-05-01T00:00:00Z",
                                   "end": "2024-05-02T00:00:00Z", "grace_minutes": 60}
        names = ANOMALY_NAMES
        if sc in ("exactly-once", "mixed-eos"):
            names += tuple(n for n in TXN_NAMES if n not in ANOMALY_NAMES)
        assert tuple(truth["anomalies"]) == names
        assert tuple(truth["by_cause"]["dup_write"]) == DUP_WRITE_CAUSES
        assert tuple(truth["by_cause"]["redelivery"]) == REDELIVERY_CAUSES
        assert sum(truth["by_cause"]["dup_write"].values()) == truth["anomalies"]["dup_write"]
        assert sum(truth["by_cause"]["redelivery"].values()) == truth["anomalies"]["redelivery"]
        assert truth["judged"] == 500
        for g in truth["groups"].values():
            assert tuple(g["states"]) == STATES
            assert sum(g["states"].values()) == g["judged"]
        for name in ("skipped", "pending", "expired_unconsumed"):
            assert truth["anomalies"][name] == sum(g["states"][name]
                                                   for g in truth["groups"].values())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_reference_evaluator_agrees_with_truth(generated, scenario):
    d, truth = generated[scenario]
    result = reference_audit(d, truth["window"]["start"], truth["window"]["end"])
    assert comparable(result) == comparable(truth)


def test_reference_agrees_on_parquet_and_other_seeds(tmp_path):
    for sc, n, seed, fmt in (("mixed", 800, 11, "parquet"), ("consumer-loss", 300, 5, "jsonl"),
                             ("rebalance-storm", 200, 9, "parquet"),
                             ("broker-loss", 1200, 2, "jsonl")):
        d = tmp_path / f"{sc}-{fmt}"
        truth = generate_scenario(sc, n, seed, START, d, fmt=fmt)
        assert list((d / "broker").glob("*.parquet" if fmt == "parquet" else "*.jsonl"))
        result = reference_audit(d, truth["window"]["start"], truth["window"]["end"])
        assert comparable(result) == comparable(truth), (sc, fmt)


def test_expected_anomalies_per_scenario(generated):
    for sc, want in EXPECTED_NONZERO.items():
        nonzero = {k for k, v in generated[sc][1]["anomalies"].items() if v}
        assert want <= nonzero, sc
        if sc == "clean":
            assert nonzero == set()
    storm = generated["rebalance-storm"][1]
    assert storm["by_cause"]["redelivery"]["rebalance"] == storm["anomalies"]["redelivery"]


def test_mixed_hits_every_anomaly(tmp_path):
    truth = generate_scenario("mixed", 2000, 7, START, tmp_path / "m")
    # (contract §9's anomalies are the exactly-once scenario's: mixed has no transactions)
    section9 = {"aborted_read", "hanging_transaction", "zombie_write", "late_delivery"}
    assert all(truth["anomalies"][n] > 0 for n in ANOMALY_NAMES if n not in section9), \
        truth["anomalies"]
    assert all(v > 0 for v in truth["by_cause"]["dup_write"].values())
    assert all(v > 0 for v in truth["by_cause"]["redelivery"].values())
    assert len(truth["groups"]) >= 2
    topics = {t for g in load_config(tmp_path / "m" / "config.yaml").groups for t in g.topics}
    assert len(topics) >= 3
    cfg = load_config(tmp_path / "m" / "config.yaml")
    assert any(set(g.topics) < topics for g in cfg.groups)


def test_determinism(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    ta = generate_scenario("mixed", 600, 42, START, a)
    tb = generate_scenario("mixed", 600, 42, START, b)
    tc = generate_scenario("mixed", 600, 43, START, c)
    assert ta == tb
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    part = "broker/part-00000.jsonl"
    assert (a / part).read_bytes() != (c / part).read_bytes()
    assert tc != ta


def test_regeneration_replaces_old_parts(tmp_path):
    generate_scenario("clean", 300, 1, START, tmp_path, fmt="jsonl")
    generate_scenario("clean", 300, 1, START, tmp_path, fmt="parquet")
    assert not list(tmp_path.rglob("part-*.jsonl"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_structure(generated, scenario):
    d, truth = generated[scenario]
    rows = {s: _rows(d, s) for s in SOURCES}
    start, end = _ms(truth["window"]["start"]), _ms(truth["window"]["end"])
    read_until = end + 60 * 60_000
    for s in SOURCES:
        assert list((d / s).glob("part-*.jsonl")), s
    # the window edges are exercised: sends before, inside grace and beyond it
    send_ts = [r["send_ts"] for r in rows["sends"]]
    assert any(t < start for t in send_ts)
    assert any(end <= t < read_until for t in send_ts)
    assert any(t >= read_until for t in send_ts)
    # broker: unique and dense offsets per partition
    offs = defaultdict(list)
    for r in rows["broker"]:
        offs[(r["topic"], r["partition"])].append(r["offset"])
    for k, v in offs.items():
        assert len(v) == len(set(v)) == max(v) - min(v) + 1, k
    # sends: acked rows carry partition/offset; acks come after sends
    for r in rows["sends"]:
        assert r["status"] in ("acked", "failed", "timeout", "aborted")
        assert r["status"] != "aborted" or "transactional_id" in r
        if r["status"] == "acked":
            assert "partition" in r and "offset" in r
        if "ack_ts" in r:
            assert r["ack_ts"] > r["send_ts"]
    # ledger: processing starts after the append; one member never overlaps itself
    ts_at = {(r["topic"], r["partition"], r["offset"]): r.get("timestamp") for r in rows["broker"]}
    per_member = defaultdict(list)
    for r in rows["ledger"]:
        b = ts_at.get((r["topic"], r["partition"], r["offset"]))
        if b is not None:
            assert r["started_ts"] > b
        assert r["finished_ts"] >= r["started_ts"]
        per_member[(r["group_id"], r["member_id"], r["topic"], r["partition"])].append(
            (r["started_ts"], r["finished_ts"]))
    for k, iv in per_member.items():
        iv = sorted(set(iv))          # exact duplicate log lines (mixed) are artefacts
        assert all(b[0] >= a[1] for a, b in zip(iv, iv[1:], strict=False)), k
    # every event is one of the contract's, assignment events name a partition
    for e in rows["events"]:
        assert e["event"] in ("assigned", "revoked", "lost", "commit", "commit_failed",
                              "left_group", "joined_group")
        if e["event"] in ("assigned", "revoked", "lost", "commit", "commit_failed"):
            assert "topic" in e and "partition" in e
    cfg = load_config(d / "config.yaml")
    assert cfg.grace_minutes == 60 and cfg.dense_seq
    assert {g.group_id for g in cfg.groups} == set(truth["groups"])
    for g in cfg.groups:
        assert g.topics and g.get("max.poll.records") and g.get("max.poll.interval.ms")


def test_storm_events_tell_the_incident(generated):
    d, _ = generated["rebalance-storm"]
    ev = _rows(d, "events")
    kinds = {e["event"] for e in ev}
    assert {"commit_failed", "revoked", "assigned", "left_group"} <= kinds
    assert any(e["event"] == "left_group" and e.get("detail") == "poll timeout" for e in ev)
    assert all(e["detail"].startswith("Commit cannot be completed since the group has already "
                                      "rebalanced") for e in ev if e["event"] == "commit_failed")
    cfg = load_config(d / "config.yaml").groups[0]
    assert cfg.get("max.poll.records") == 500 and cfg.get("max.poll.interval.ms") == 300_000


def test_rates(tmp_path):
    with pytest.raises(ValueError):
        generate_scenario("mixed", 500, 1, START, tmp_path / "x", rates={"nonsense": 1})
    with pytest.raises(ValueError):
        generate_scenario("nope", 500, 1, START, tmp_path / "y")
    with pytest.raises(ValueError):
        generate_scenario("clean", 500, 1, START.replace(tzinfo=None), tmp_path / "z")
    off = {k: 0 for k in DEFAULT_RATES}
    truth = generate_scenario("mixed", 400, 1, START, tmp_path / "off", rates=off)
    # only the non-rate faults remain: retention, lag at the end, null-key split
    nonzero = {k for k, v in truth["anomalies"].items() if v}
    assert nonzero <= {"expired_unconsumed", "pending", "key_partition_split"}
    more = generate_scenario("producer-retry", 2000, 1, START, tmp_path / "more",
                             rates={"producer_retry": 0.01})
    assert more["injected"]["producer_retry"]["instances"] == 20


def test_chunking_keeps_truth(tmp_path):
    """Several chunks (one part file each) give the same kind of exact truth."""
    d = tmp_path / "chunks"
    truth = generate_scenario("mixed", 3000, 5, START, d, chunk_size=700)
    assert len(list((d / "broker").glob("part-0*.jsonl"))) >= 4
    result = reference_audit(d, truth["window"]["start"], truth["window"]["end"])
    assert comparable(result) == comparable(truth)


# -- the reference evaluator on hand-written cases -----------------------------------------
def _write(d: Path, source: str, rows: list[dict]) -> None:
    (d / source).mkdir(parents=True, exist_ok=True)
    (d / source / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _iso(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def test_reference_on_hand_written_case(tmp_path):
    def S(m, k, s, st, **kw):
        return dict(send_ts=_iso(m), topic="t", key=k, seq=s, status=st, **kw)

    def B(p, o, k, s, m):
        return dict(topic="t", partition=p, offset=o, key=k, seq=s, timestamp=_iso(m))

    L = lambda mem, p, o, a, b, out="success": dict(  # noqa: E731
        group_id="g", member_id=mem, topic="t", partition=p, offset=o, started_ts=_iso(a),
        finished_ts=_iso(b), outcome=out)
    _write(tmp_path, "sends", [
        S(10, "a", 1, "timeout", attempt=1),
        S(11, "a", 1, "acked", partition=0, offset=10, attempt=2),
        S(20, "a", 2, "acked", partition=0, offset=12),
        S(30, "a", 5, "acked", partition=0, offset=13),          # seqs 3, 4 never sent: seq_gap 2
        S(40, "b", 1, "acked", partition=0, offset=11),          # offset 11 holds a: lost_acked
        S(41, "b", 2, "failed"),                                 # lost_unacked
        S(42, "b", 3, "acked", partition=0, offset=5),           # below the log start: expired
        S(43, "b", 4, "acked", partition=0, offset=99),          # after the dump's end: pending
        S(-5, "a", 0, "acked", partition=0, offset=9),           # before the window: not judged
        S(44, "c", 1, "acked", partition=0, offset=15),
        S(45, "c", 2, "acked", partition=0, offset=16),
    ])
    _write(tmp_path, "broker", [
        B(0, 9, "a", 0, -5), B(0, 10, "a", 1, 10), B(0, 11, "a", 1, 11), B(0, 12, "a", 2, 20),
        B(0, 13, "a", 5, 30), B(0, 14, None, None, 31), B(0, 15, "c", 1, 44),
        B(0, 16, "c", 2, 45),
    ])
    _write(tmp_path, "ledger", [
        L("m1", 0, 10, 50, 51), L("m1", 0, 11, 52, 53),          # a/1 twice: dup_effect
        L("m1", 0, 12, 54, 55, "failure"), L("m1", 0, 12, 56, 57),  # retry_after_failure
        L("m1", 0, 12, 58, 59),                                  # redelivery, other
        L("m2", 0, 12, 58.5, 60),                                # redelivery, rebalance; overlap
        L("m1", 0, 12, 58, 59),                                  # exact duplicate: quarantined
        L("m2", 0, 16, 61, 62),                                  # c/2 first, then c/1 (reorder)
        L("m2", 0, 15, 63, 64),
    ])
    _write(tmp_path, "events", [dict(group_id="g", ts=_iso(70), event="commit", topic="t",
                                     partition=0, offset=14)])
    res = reference_audit(tmp_path, _iso(0), _iso(24 * 60),
                          config={"groups": {"g": {"topics": ["t"]}}})
    a = res["anomalies"]
    assert res["quarantined"]["ledger"] == 1
    assert res["judged"] == 9
    assert a["dup_write"] == 1 and res["by_cause"]["dup_write"]["producer_retry"] == 1
    assert a["seq_gap"] == 2 and a["lost_acked"] == 1 and a["lost_unacked"] == 1
    assert a["dup_effect"] == 1 + 2          # a/1 k=2, a/2 k=3
    assert a["redelivery"] == 2
    assert res["by_cause"]["redelivery"] == {"rebalance": 1, "other": 1}
    assert a["retry_after_failure"] == 1
    assert a["concurrent_processing"] == 2   # both sides of the m1/m2 overlap
    assert a["process_reorder"] == 1
    st = res["groups"]["g"]["states"]
    # a/5 at offset 13: not processed, offset 16 attempted and 14 committed → skipped;
    # b/4 acked after the dump's end: state pending, but not the "in the broker" anomaly
    assert st == {"delivered_once": 2, "delivered_duplicate": 2, "lost_acked": 1,
                  "lost_unacked": 1, "skipped": 1, "expired_unconsumed": 1, "pending": 1}
    assert a["skipped"] == 1 and a["expired_unconsumed"] == 1 and a["pending"] == 0
    assert a["key_partition_split"] == 0 and a["write_reorder"] == 0
