"""A tiny hostile input (markup in every data-derived string) and real audits of it, shared by
tests/test_security.py and tests/test_privacy.py.

The fixtures are registered once, in conftest.py. ``plain_audit`` is session-scoped: both
modules reuse one real audit (CLI → Spark → report.json, report.html, Parquet tables,
notifier) of the same input.

The input (topic TOPIC, group GROUP, one partition; window 2026-11-19):

* sends: KEY_A seq 1-4 acked at offsets 0, 1, 4, 6; KEY_B seq 1 timed out (error text
  ERROR_TEXT) and was retried: two broker copies at offsets 2 and 3 (dup_write); KEY_B seq 2
  acked at offset 5, absent from the dump [0, 7) (lost_acked); two bad rows (a status that
  is markup, a line that is not JSON) quarantined.
* ledger: MEMBER_1 processes offsets 0-3; after MEMBER_1 left (detail DETAIL) MEMBER_2
  processes offsets 1 (again: redelivery, dup_effect), 4 and 6; one bad row (an offset that
  is markup) quarantined. KEY_B seq 1 is processed twice (both copies): dup_effect.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

TOPIC = 'orders"><img src=x onerror=alert("topic")>'
GROUP = "billing<script>alert('group')</script>"
KEY_A = "cust-4711<script>alert(1)</script>"
KEY_B = 'cust-0815"><img src=x onerror=alert(1)>'
MEMBER_1 = "consumer-host-a<script>alert('m1')</script>"
MEMBER_2 = 'consumer-host-b"><svg onload=alert(2)>'
PRODUCER = "producer-host-z<script>alert('p')</script>"
ERROR_TEXT = "<img src=x onerror=alert(3)> Expiring 1 record(s)"
DETAIL = f"{MEMBER_1} left the group: consumer poll timeout has expired <b onmouseover=x>"
BAD_STATUS = "<script>alert(6)</script>"
BAD_OFFSET = "<img src=x onerror=alert(7)>"
NOT_JSON = f"not json {KEY_A}"

#: every markup payload that reaches the outputs (HTML must show them only escaped)
PAYLOADS = (TOPIC, GROUP, KEY_A, KEY_B, MEMBER_1, MEMBER_2, PRODUCER, ERROR_TEXT, DETAIL,
            BAD_STATUS, BAD_OFFSET)
#: identifiers pseudonymisation must hide (distinctive prefixes: no false hits)
IDENTIFIERS = ("cust-4711", "cust-0815", "consumer-host-a", "consumer-host-b",
               "producer-host-z")

#: secrets configured for the audits (none may appear in any output, log or message)
AWS_SECRET = "AwsSecretKey/abc123+XYZ987SECRETVALUE"
SLACK_SECRET = "XoXsLaCkWeBhOoKsEcReT42"
PSEUDONYM_SECRET = "pseudonym-secret-0123456789abcdef"
SECRETS = (AWS_SECRET, SLACK_SECRET, PSEUDONYM_SECRET)

WINDOW = ["--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z"]
REPORT_DIR = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"


def _ts(minute: int, second: int = 0) -> str:
    return f"2026-11-19T10:{minute:02d}:{second:02d}Z"


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_inputs(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    sends = [
        {"send_ts": _ts(0, 0), "topic": TOPIC, "key": KEY_A, "seq": 1, "status": "acked",
         "partition": 0, "offset": 0, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 1), "topic": TOPIC, "key": KEY_A, "seq": 2, "status": "acked",
         "partition": 0, "offset": 1, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 2), "topic": TOPIC, "key": KEY_B, "seq": 1, "status": "timeout",
         "attempt": 1, "producer_id": PRODUCER, "error": ERROR_TEXT},
        {"send_ts": _ts(0, 32), "topic": TOPIC, "key": KEY_B, "seq": 1, "status": "acked",
         "partition": 0, "offset": 3, "attempt": 2, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 40), "topic": TOPIC, "key": KEY_A, "seq": 3, "status": "acked",
         "partition": 0, "offset": 4, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 41), "topic": TOPIC, "key": KEY_B, "seq": 2, "status": "acked",
         "partition": 0, "offset": 5, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 42), "topic": TOPIC, "key": KEY_A, "seq": 4, "status": "acked",
         "partition": 0, "offset": 6, "producer_id": PRODUCER},
        {"send_ts": _ts(0, 50), "topic": TOPIC, "key": KEY_A, "seq": 9, "status": BAD_STATUS,
         "producer_id": PRODUCER, "error": ERROR_TEXT},
    ]
    broker = [
        {"topic": TOPIC, "partition": 0, "offset": o, "key": k, "seq": s,
         "timestamp": _ts(0, t), "producer_id": PRODUCER}
        for o, k, s, t in ((0, KEY_A, 1, 0), (1, KEY_A, 2, 1), (2, KEY_B, 1, 2),
                           (3, KEY_B, 1, 32), (4, KEY_A, 3, 40), (6, KEY_A, 4, 42))
    ]
    ledger = [
        {"group_id": GROUP, "member_id": m, "topic": TOPIC, "partition": 0, "offset": o,
         "started_ts": _ts(mi, s), "finished_ts": _ts(mi, s + 1), "outcome": "success",
         "generation": g}
        for m, o, mi, s, g in ((MEMBER_1, 0, 1, 0, 1), (MEMBER_1, 1, 1, 2, 1),
                               (MEMBER_1, 2, 1, 4, 1), (MEMBER_1, 3, 1, 6, 1),
                               (MEMBER_2, 1, 31, 0, 2), (MEMBER_2, 4, 31, 2, 2),
                               (MEMBER_2, 6, 31, 4, 2))
    ]
    ledger.append({"group_id": GROUP, "member_id": MEMBER_1, "topic": TOPIC, "partition": 0,
                   "offset": BAD_OFFSET, "started_ts": _ts(2), "outcome": "success"})
    events = [
        {"group_id": GROUP, "member_id": MEMBER_1, "ts": _ts(30, 0), "event": "revoked",
         "topic": TOPIC, "partition": 0, "generation": 1, "detail": DETAIL},
        {"group_id": GROUP, "member_id": MEMBER_1, "ts": _ts(30, 1), "event": "left_group",
         "generation": 1, "detail": DETAIL},
        {"group_id": GROUP, "member_id": MEMBER_2, "ts": _ts(30, 30), "event": "assigned",
         "topic": TOPIC, "partition": 0, "generation": 2},
    ]
    paths = {}
    for name, rows in (("sends", sends), ("broker", broker), ("ledger", ledger),
                       ("events", events)):
        lines = [json.dumps(r, ensure_ascii=False) for r in rows]
        if name == "sends":
            lines.append(NOT_JSON)
        paths[name] = root / f"{name}.jsonl"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def write_config(path: Path, *, pseudonymise: bool, webhook_port: int) -> Path:
    cfg: dict[str, Any] = {
        "pseudonymise": pseudonymise,
        "notifier": {"type": "slack", "timeout_s": 2,
                     "webhook_url": f"http://127.0.0.1:{webhook_port}/services/T0/B0/"
                                    f"{SLACK_SECRET}"},
    }
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.lines.append(f"{record.name} {record.levelname} {text}")


@dataclass
class AuditRun:
    exit_code: int
    output: str  # stdout + stderr of the command
    logs: list[str]  # every log record emitted while it ran
    report: dict | None
    dir: Path  # the window's published folder
    seconds: float

    def files(self) -> list[Path]:
        return sorted(p for p in self.dir.rglob("*") if p.is_file())


def run_cli_audit(inputs: dict[str, Path], out: Path, config: Path,
                  env: dict[str, str]) -> AuditRun:
    """One real audit through ``delivery-audit run`` with env set and logging captured."""
    from delivery_audit.cli import app

    handler = _Records()
    root = logging.getLogger()
    da = logging.getLogger("delivery_audit")
    old_level = da.level
    root.addHandler(handler)
    da.setLevel(logging.DEBUG)
    t0 = time.perf_counter()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        try:
            result = CliRunner().invoke(app, [
                "run", "--sends", str(inputs["sends"]), "--broker", str(inputs["broker"]),
                "--ledger", str(inputs["ledger"]), "--events", str(inputs["events"]), *WINDOW,
                "--config", str(config), "--out", str(out)])
        finally:
            root.removeHandler(handler)
            da.setLevel(old_level)
    seconds = time.perf_counter() - t0
    report_path = out / REPORT_DIR / "report.json"
    report = json.loads(report_path.read_text("utf-8")) if report_path.is_file() else None
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        output += "".join(traceback.format_exception(result.exception))
    return AuditRun(result.exit_code, output, handler.lines, report, out / REPORT_DIR, seconds)


def secret_env() -> dict[str, str]:
    return {"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "AWS_ACCESS_KEY_ID": "AKIATESTSECURITY01",
            "DELIVERY_AUDIT_PSEUDONYM_KEY": PSEUDONYM_SECRET}


@pytest.fixture(scope="session")
def hostile_inputs(tmp_path_factory) -> dict[str, Path]:
    return write_inputs(tmp_path_factory.mktemp("hostile") / "in")


@pytest.fixture(scope="session")
def plain_audit(spark, hostile_inputs, tmp_path_factory) -> AuditRun:
    """The hostile input audited without pseudonymisation (secrets in env and config)."""
    tmp = tmp_path_factory.mktemp("plain")
    config = write_config(tmp / "config.json", pseudonymise=False, webhook_port=closed_port())
    run = run_cli_audit(hostile_inputs, tmp / "reports", config, secret_env())
    assert run.report is not None, run.output
    return run


def text_of(path: Path) -> str:
    """A published file as text: Parquet as every cell of every column, others decoded."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        return "\n".join(str(v) for col in table.columns for v in col.to_pylist())
    return path.read_bytes().decode("utf-8", errors="replace")

