"""Remediation artefacts, published with the report under ``remediation/``.

From the anomaly table as written (pyarrow, after the audit's one write: no Spark job) and
report.json's figures:

* ``replay.parquet`` / ``replay.csv`` — the messages to re-produce or re-process
  (:mod:`.replay`);
* ``dedupe.parquet`` / ``dedupe.csv`` — the extra copies and processings to compensate
  (:mod:`.dedupe`);
* ``commands.txt`` — offset resets for skipped ranges, the settings to change and the
  transactions to abort (:mod:`.commands`).

The CSV files are formula-safe (:mod:`.csv_cells`); the Parquet files hold the exact
values. :func:`write_remediation` writes them into the staged report folder, so the
manifest lists them, and returns their summary for report.json's ``remediation``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..anomaly_table import read_anomalies
from ..txn_evidence import TXN_ANOMALIES
from .commands import (
    abort_command,
    commands_text,
    config_changes,
    find_hanging_command,
    offset_resets,
    producer_changes,
    transaction_advice,
)
from .csv_cells import write_csv
from .dedupe import DEDUPE, dedupe_table
from .replay import REPLAY, replay_table

FOLDER = "remediation"
MAX_RESETS_IN_REPORT = 100


def _counts(table: pa.Table, names: tuple[str, ...]) -> dict[str, int]:
    if table.num_rows == 0:
        return {}
    got = {r["anomaly"]: int(r["units_sum"]) for r in
           table.group_by("anomaly").aggregate([("units", "sum")]).to_pylist()} \
        if "units" in table.column_names else {
            r["values"]: int(r["counts"]) for r in
            pc.value_counts(table["anomaly"]).to_pylist()}
    return {n: got[n] for n in names if n in got}


def _write(table: pa.Table, folder: Path, name: str, names: tuple[str, ...]) -> dict[str, Any]:
    pq.write_table(table, folder / f"{name}.parquet")
    write_csv(table, folder / f"{name}.csv")
    return {"rows": table.num_rows, "by_anomaly": _counts(table, names),
            "csv": f"{FOLDER}/{name}.csv", "parquet": f"{FOLDER}/{name}.parquet"}


def write_remediation(anomalies: pa.Table | str | Path, report_dir: str | Path,
                      report: dict[str, Any],
                      reach: dict[tuple[str, str, int], int] | None = None) -> dict[str, Any]:
    """Write ``remediation/`` into ``report_dir`` from the anomaly table (rows read with
    :func:`~delivery_audit.anomaly_table.read_anomalies`, or the path of its local folder)
    and ``report`` (its rebalances, anomalies, window); ``reach``: the highest offset each
    (group, topic, partition) processed or committed (ingestion's facts), for the resets'
    notes. Returns the summary for report.json's ``remediation``."""
    folder = Path(report_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    table = anomalies if isinstance(anomalies, pa.Table) else read_anomalies(
        anomalies, REPLAY + DEDUPE + TXN_ANOMALIES)
    summary: dict[str, Any] = {
        "replay": _write(replay_table(table), folder, "replay", REPLAY),
        "dedupe": _write(dedupe_table(table), folder, "dedupe", DEDUPE),
    }
    resets = offset_resets(table, reach)
    changes = config_changes(report)
    producer = producer_changes(report)
    txn = transaction_advice(table)
    (folder / "commands.txt").write_text(
        commands_text(report, summary, resets, changes, producer, txn), encoding="utf-8",
        newline="\n")
    summary.update({
        "commands": f"{FOLDER}/commands.txt",
        "offset_resets": resets[:MAX_RESETS_IN_REPORT],
        "offset_resets_total": len(resets),
        "config_changes": changes,
        "producer_changes": producer,
        "transaction_commands": [
            {"topic": h["topic"], "partition": h["partition"], "pid": h["pid"],
             "start_offset": h["first_offset"],
             "find_hanging": find_hanging_command(h["topic"], h["partition"]),
             "abort": abort_command(h["topic"], h["partition"], h["first_offset"])}
            for h in txn["hanging"][:MAX_RESETS_IN_REPORT]],
        # aborted reads by a group that does not read committed: the setting to change
        "isolation_changes": [
            {"group_id": i["group_id"], "setting": "isolation.level", "current": i["cause"],
             "advised": "read_committed", "aborted_reads": i["reads"]}
            for i in txn["isolation"] if i["cause"] != "read_committed"],
    })
    return summary
