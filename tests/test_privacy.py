"""Pseudonymisation (privacy.py): keys, member ids and producer ids become keyed HMAC-SHA256
pseudonyms in every output, the counts do not change, and the secret is required.

One real pseudonymising audit of the hostile input (tests/hostile_audit.py) is compared with
the plain audit of the same input (shared with test_security.py).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import release_cached_frames
from hostile_audit import (
    DETAIL,
    GROUP,
    IDENTIFIERS,
    KEY_A,
    KEY_B,
    MEMBER_1,
    MEMBER_2,
    PSEUDONYM_SECRET,
    SECRETS,
    TOPIC,
    WINDOW,
    closed_port,
    run_cli_audit,
    secret_env,
    text_of,
    write_config,
)
from typer.testing import CliRunner

from delivery_audit.privacy import (
    KEY_ENV,
    RAW_WITHHELD,
    PseudonymKeyError,
    hmac_pads,
    hmac_sha256_hex,
    pseudonym,
    pseudonym_key,
)

REPO = Path(__file__).resolve().parents[1]
SECRET = PSEUDONYM_SECRET.encode()


@pytest.fixture(scope="module")
def pseudo_audit(spark, hostile_inputs, tmp_path_factory):
    release_cached_frames()  # the session's second audit in a row: start with free memory
    tmp = tmp_path_factory.mktemp("pseudo")
    config = write_config(tmp / "config.json", pseudonymise=True, webhook_port=closed_port())
    run = run_cli_audit(hostile_inputs, tmp / "reports", config, secret_env())
    assert run.report is not None, run.output
    return run


def _table(run, name: str) -> list[dict]:
    return pq.read_table(run.dir / name).to_pylist()


# --------------------------------------------------------------------------- the HMAC


def test_spark_hmac_is_rfc_4231_hmac_sha256(spark):
    """The built-in-functions HMAC gives RFC 4231's test vectors (short key; a key longer
    than the block, hashed first) and Python's hmac for other values."""
    cases = [
        (b"Jefe", "what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (b"\xaa" * 131, "Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ]
    for value in ("", "é—中文🙂", KEY_A, "x" * 300):
        cases.append((SECRET, value, hmac.new(SECRET, value.encode(), hashlib.sha256)
                      .hexdigest()))
    rows = [(value, bytearray(hmac_pads(key)[0]), bytearray(hmac_pads(key)[1]), want)
            for key, value, want in cases]
    from pyspark.sql import functions as F

    df = spark.createDataFrame(rows, "v string, ipad binary, opad binary, want string")
    got = df.select(hmac_sha256_hex(F.col("v"), F.col("ipad"), F.col("opad")).alias("h"),
                    "want").collect()
    assert [r["h"] for r in got] == [r["want"] for r in got]


def test_pseudonym_shape_and_key_dependence():
    p = pseudonym(KEY_A, SECRET, "k_")
    assert re.fullmatch(r"k_[0-9a-f]{32}", p)
    assert p == pseudonym(KEY_A, SECRET, "k_")  # stable
    assert p != pseudonym(KEY_A, SECRET + b"!", "k_")  # keyed
    assert p != pseudonym(KEY_B, SECRET, "k_")
    assert pseudonym(None, SECRET, "k_") is None


def test_missing_or_short_key_is_a_clear_error():
    with pytest.raises(PseudonymKeyError, match=KEY_ENV):
        pseudonym_key({})
    with pytest.raises(PseudonymKeyError, match="too short"):
        pseudonym_key({KEY_ENV: "short"})
    assert pseudonym_key({KEY_ENV: PSEUDONYM_SECRET}) == SECRET


def test_cli_refuses_pseudonymise_without_key_before_spark(tmp_path, monkeypatch):
    import delivery_audit.spark
    from delivery_audit.cli import app

    def no_spark(*a, **k):
        raise AssertionError("Spark must not start without the pseudonymisation key")

    monkeypatch.setattr(delivery_audit.spark, "get_spark", no_spark)
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "400")
    config = write_config(tmp_path / "c.json", pseudonymise=True, webhook_port=closed_port())
    result = CliRunner().invoke(app, [
        "run", "--sends", "s.jsonl", "--broker", "b.jsonl", "--ledger", "l.jsonl", *WINDOW,
        "--config", str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert KEY_ENV in result.output and "pseudonymise is on" in result.output
    assert not (tmp_path / "out").exists()


def test_airflow_key_source_env_then_connection():
    if str(REPO / "plugins") not in sys.path:
        sys.path.append(str(REPO / "plugins"))
    from delivery_audit_airflow.settings import PSEUDONYM_CONN_ID, pseudonym_key_env

    asked: list[str] = []

    def password(conn_id: str) -> str | None:
        asked.append(conn_id)
        return "from-the-connection-0123456789"

    assert pseudonym_key_env({KEY_ENV: PSEUDONYM_SECRET}, password) == {KEY_ENV: PSEUDONYM_SECRET}
    assert asked == []
    assert pseudonym_key_env({}, password) == {KEY_ENV: "from-the-connection-0123456789"}
    assert asked == [PSEUDONYM_CONN_ID]
    assert pseudonym_key_env({}, lambda _: None) == {}


# --------------------------------------------------------------------------- the real audit


@pytest.mark.audit
def test_counts_identical_with_and_without_pseudonymisation(plain_audit, pseudo_audit):
    plain, pseudo = plain_audit.report, pseudo_audit.report
    assert pseudo["config"]["pseudonymise"] is True and plain["config"]["pseudonymise"] is False
    assert pseudo["anomalies"] == plain["anomalies"]
    assert sum(a["count"] for a in plain["anomalies"].values()) >= 5
    assert pseudo["groups"] == plain["groups"]  # group ids and topics stay readable
    assert pseudo["judged_by_topic"] == plain["judged_by_topic"] == {TOPIC: 6}
    for source, counts in plain["inputs"].items():
        for k in ("rows_read", "rows_valid", "rows_quarantined", "rows_after_window"):
            assert pseudo["inputs"][source][k] == counts[k], (source, k)
    assert pseudo["verdict"] == plain["verdict"]
    assert pseudo_audit.exit_code == plain_audit.exit_code == 3

    def per_anomaly(run):
        out: dict[str, int] = {}
        for r in _table(run, "anomalies"):
            out[r["anomaly"]] = out.get(r["anomaly"], 0) + r["units"]
        return out

    assert per_anomaly(pseudo_audit) == per_anomaly(plain_audit)


def test_no_raw_identifier_in_any_output(plain_audit, pseudo_audit):
    def found(run) -> dict[str, list[str]]:
        hits: dict[str, list[str]] = {}
        for path in run.files():
            text = text_of(path)
            for ident in IDENTIFIERS:
                if ident in text:
                    hits.setdefault(ident, []).append(str(path.relative_to(run.dir)))
        return hits

    # the plain run shows every identifier somewhere (so this check can fail) ...
    assert set(found(plain_audit)) == set(IDENTIFIERS)
    # ... the pseudonymising run none, in report.json, report.html, Parquet or validation
    assert found(pseudo_audit) == {}
    assert not [i for i in IDENTIFIERS if i in pseudo_audit.output]


def test_outputs_carry_the_keyed_pseudonyms(pseudo_audit):
    def pn(value: str, prefix: str) -> str:
        return pseudonym(value, SECRET, prefix)

    rows = _table(pseudo_audit, "anomalies")
    assert {r["key"] for r in rows if r["key"]} <= {pn(KEY_A, "k_"), pn(KEY_B, "k_")}
    assert {r["key"] for r in rows if r["anomaly"] == "lost_acked"} == {pn(KEY_B, "k_")}
    members = {r[c] for r in rows for c in ("member_id", "related_member_id") if r[c]}
    assert members and members <= {pn(MEMBER_1, "m_"), pn(MEMBER_2, "m_")}
    assert {r["topic"] for r in rows} == {TOPIC} and {r["group_id"] for r in rows} - {None} \
        == {GROUP}
    html = (pseudo_audit.dir / "report.html").read_text("utf-8")
    assert pn(KEY_B, "k_") in html and pn(MEMBER_2, "m_") in html  # top keys, evidence
    # rebalance forensics: the member ids are pseudonyms, and the leave's detail keeps its
    # text (the diagnosis reads it) with the member's own id replaced
    (group,) = pseudo_audit.report["rebalances"].values()
    (eviction,) = group["evictions"]
    assert eviction["member_id"] == pn(MEMBER_1, "m_")
    assert eviction["diagnosis"] == "poll_interval_exceeded"
    assert eviction["evidence"] == "its leave says: " + DETAIL.replace(MEMBER_1,
                                                                       pn(MEMBER_1, "m_"))


def test_quarantine_keeps_location_and_reason_but_withholds_raw(plain_audit, pseudo_audit):
    def key(r):
        return (r["source"], r["file"], r["row"], r["reason"])

    plain = sorted(_table(plain_audit, "quarantine"), key=key)
    pseudo = sorted(_table(pseudo_audit, "quarantine"), key=key)
    assert len(plain) == 3
    assert [key(r) for r in pseudo] == [key(r) for r in plain]
    assert any(KEY_A in (r["raw"] or "") for r in plain)  # raw rows hold identifiers
    assert {r["raw"] for r in pseudo} == {RAW_WITHHELD}


def test_pseudonymisation_secret_never_shown(pseudo_audit):
    haystacks = {"console": pseudo_audit.output, "logs": "\n".join(pseudo_audit.logs)}
    haystacks.update({str(p.relative_to(pseudo_audit.dir)): text_of(p)
                      for p in pseudo_audit.files()})
    for where, text in haystacks.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} in {where}"
