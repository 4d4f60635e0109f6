# ruff: noqa: E501  (verbatim tool output)
"""One command audits Kafka's own tool output: kafka-verifiable-producer and
kafka-verifiable-consumer JSON lines plus a kafka-dump-log.sh text file."""

from __future__ import annotations

import json
import tempfile

import pytest
from samples import CONSUMER, PRODUCER
from typer.testing import CliRunner

from delivery_audit.cli import app

pytestmark = pytest.mark.audit  # a whole audit of tool output through the CLI: not in make test-fast

DUMP = """\
Dumping /var/lib/kafka/data/verify-test-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1646221252222 size: 82 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 0 CreateTime: 1646221252222 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: 0
| offset: 1 CreateTime: 1646221252223 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [] key: k payload: run.1
"""


def test_tool_output_directory_audits_end_to_end(spark, tmp_path, monkeypatch):
    temp = tmp_path / "temp"  # the audit's temp folders (staging, adapter output) go here
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "producer.jsonl").write_text("\n".join(PRODUCER) + "\n")
    (tools / "consumer.jsonl").write_text("\n".join(CONSUMER) + "\n")
    (tools / "verify-test-0.dump.txt").write_text(DUMP)
    out = tmp_path / "reports"
    result = CliRunner().invoke(app, [
        "run", "--sends", str(tools / "producer.jsonl"),
        "--broker", str(tools / "*.dump.txt"),
        "--ledger", str(tools / "consumer.jsonl"), "--events", str(tools / "consumer.jsonl"),
        "--format", "sends=kafka-verifiable-producer", "--format", "broker=kafka-dump-log",
        "--format", "ledger=kafka-verifiable-consumer",
        "--format", "events=kafka-verifiable-consumer",
        "--start", "2022-03-02T00:00:00Z", "--end", "2022-03-03T00:00:00Z",
        "--out", str(out), "--no-notify"])
    assert result.exit_code in (0, 3), result.output
    report = json.loads(next(out.rglob("report.json")).read_text())
    counts = {k: v["count"] for k, v in report["anomalies"].items() if v["count"]}
    # seq 2 (key k) timed out and seq 3 (null key) failed: never written; the null key's
    # judged seqs are 0 and 3, so 1 and 2 were never sent under that key
    assert counts == {"lost_unacked": 2, "seq_gap": 2}
    assert report["judged"] == 4
    (group,) = report["groups"].values()
    assert group["states"]["delivered_once"] == 2 and group["states"]["lost_unacked"] == 2
    assert group["balance_ok"]
    for source in ("sends", "broker", "ledger", "events"):
        i = report["inputs"][source]
        assert i["rows_read"] == i["rows_valid"] + i["rows_quarantined"], source
    assert report["inputs"]["sends"]["rows_quarantined"] == 2  # not JSON; value "abc"
    # the converted tool output and the staged report were removed after the run
    assert list(temp.iterdir()) == []
