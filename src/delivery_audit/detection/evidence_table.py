"""The published evidence table (``evidence/``): the source rows behind the anomalies, so
that ``delivery-audit explain`` (the explain package) can tell one message's story from the
published folder alone, without Spark.

What it holds, per identity (topic, key, seq) named by an anomaly row (seq_gap's missing
values have no rows): every send attempt, every broker copy and every processing of the
judged groups; and the group events (assigned, revoked, lost, commit_failed …, commits
left out) on the (group, topic, partition)s of the anomalies, with the member events
(joined_group, left_group) of those groups. At most :data:`PER_ANOMALY` rows of each
anomaly bring their identity in (the first by topic, key, seq): a day that lags by
millions of records does not copy its input into the report.

How it is computed: inside detection's one write (no Spark job of its own, no pass over
the inputs). The rows come from pass 1's two leaves (keyed/), which are hash partitioned
by (topic, key) and sorted by identity: the anomaly rows' identities, repartitioned the
same way, select them with a merge semi join that shuffles and sorts the identities only.
The rows travel in the anomaly table's schema (``_table=evidence``; :data:`TRANSPORT`
says which column carries what) and :func:`publish` turns them into the table's own
schema with pyarrow.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..anomalies import PER_ANOMALY
from ..schemas import ANOMALY_SCHEMA
from .keyed import KeyedPass
from .keyed.layout import ID, KEY, LEDGER, SEND

FILE = "evidence.parquet"

# the evidence column each transport column (the anomaly table's) carries
TRANSPORT = {
    "anomaly": "source",  # sends | broker | ledger | events
    "topic": "topic", "key": "key", "seq": "seq", "partition": "partition",
    "offset": "offset", "group_id": "group_id", "member_id": "member_id",
    "ts": "ts",  # send_ts | timestamp | started_ts | ts
    "related_ts": "end_ts",  # ack_ts | — | finished_ts | —
    "cause": "status",  # status | — | outcome | event
    "attempts": "attempt", "related_member_id": "producer_id",
    "seq_to": "idempotent",  # 1 | 0 | null
    "related_partition": "generation", "detail": "detail",  # send error | event detail
}
SOURCES = ("sends", "broker", "ledger", "events")  # the order of a story


def _transport(df: DataFrame, **columns: str) -> DataFrame:
    """``df``'s rows in the anomaly table's schema (columns as SQL text, the rest null)."""
    given = {"severity": "'info'", "units": "1", **columns}
    return df.selectExpr(*[f"CAST({given.get(f.name, 'NULL')} AS "
                           f"{f.dataType.simpleString()}) AS {f.name}"
                           for f in ANOMALY_SCHEMA.fields])


def identities(anomalies: DataFrame) -> DataFrame:
    """The identities the evidence keeps, hash partitioned like pass 1's leaves."""
    order = [F.col(c).asc_nulls_first() for c in
             ("topic", "key_null", "key_v", "seq", "partition", "offset", "group_id",
              "member_id")]
    named = (anomalies.filter(F.col("seq").isNotNull() & F.col("topic").isNotNull()
                              & (F.col("anomaly") != "seq_gap"))
             .select("anomaly", "topic", F.col("key").isNull().alias("key_null"),
                     F.coalesce(F.col("key"), F.lit("")).alias("key_v"), "seq", "partition",
                     "offset", "group_id", "member_id"))
    first = named.withColumn("_n", F.row_number().over(
        Window.partitionBy("anomaly").orderBy(*order))).filter(F.col("_n") <= PER_ANOMALY)
    return first.select(*ID).repartition(*[F.col(c) for c in KEY])


def evidence_rows(keyed: KeyedPass, anomalies: DataFrame, events: DataFrame,
                  send_errors: bool = True) -> DataFrame:
    """Every evidence row, in the anomaly table's schema (nothing runs here).
    ``send_errors`` false: the sends' ``error`` text is left out (a pseudonymising audit:
    privacy.py replaces identifiers in columns, not inside a producer's free text)."""
    ids = identities(anomalies)
    key = "IF(key_null, CAST(NULL AS STRING), key_v)"
    sb = keyed.sends_broker.hint("merge").join(ids.hint("merge"), on=ID, how="left_semi")
    sent = f"_side = {SEND}"
    sends_broker = _transport(
        sb, anomaly=f"IF({sent}, 'sends', 'broker')", topic="topic", key=key, seq="seq",
        partition="partition", offset="offset", ts=f"IF({sent}, send_ts, timestamp)",
        related_ts="ack_ts",
        # a transactional copy's outcome (contract §9): committed, aborted or open
        cause=f"IF({sent}, status, IF(marker IS NOT NULL OR txn <> 'committed', txn, NULL))",
        attempts="attempt",
        related_member_id="producer_id",
        seq_to=f"IF({sent}, CAST(idempotent AS INT), NULL)",
        detail="error" if send_errors else "NULL")
    lm = (keyed.ledger.filter(F.col("_side") == LEDGER).hint("merge")
          .join(ids.hint("merge"), on=ID, how="left_semi"))
    ledger = _transport(
        lm, anomaly="'ledger'", topic="topic", key=key, seq="seq", partition="partition",
        offset="offset", group_id="group_id", member_id="member_id", ts="started_ts",
        related_ts="finished_ts", cause="outcome", related_partition="generation")
    return sends_broker.unionByName(ledger).unionByName(_transport(
        group_events(anomalies, events), anomaly="'events'", topic="topic",
        partition="partition", offset="offset", group_id="group_id", member_id="member_id",
        ts="ts", cause="event", related_partition="generation", detail="detail"))


def group_events(anomalies: DataFrame, events: DataFrame) -> DataFrame:
    """The events (commits left out) of the (group, topic, partition)s of the anomalies,
    and the member events (no partition) of their groups: shuffle joins, never a
    broadcast (a Spark job of its own)."""
    tps = (anomalies.filter(F.col("group_id").isNotNull() & F.col("topic").isNotNull()
                            & F.col("partition").isNotNull())
           .select("group_id", "topic", "partition").distinct())
    kept = events.filter(F.col("event") != "commit")
    on_partitions = (kept.filter(F.col("partition").isNotNull()).hint("merge")
                     .join(tps.hint("merge"), on=["group_id", "topic", "partition"],
                           how="left_semi"))
    of_members = (kept.filter(F.col("partition").isNull()).hint("merge")
                  .join(tps.select("group_id").distinct().hint("merge"), on="group_id",
                        how="left_semi"))
    return on_partitions.unionByName(of_members)


def arrow_schema():
    ts = pa.timestamp("us", tz="UTC")
    return pa.schema([
        ("source", pa.string()), ("topic", pa.string()), ("key", pa.string()),
        ("seq", pa.int64()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("group_id", pa.string()), ("member_id", pa.string()), ("ts", ts), ("end_ts", ts),
        ("status", pa.string()), ("attempt", pa.int32()), ("producer_id", pa.string()),
        ("idempotent", pa.bool_()), ("generation", pa.int32()), ("detail", pa.string()),
    ])


SORT = ("topic", "key", "seq", "source", "group_id", "ts", "member_id", "partition", "offset",
        "status")


def publish(detection_root: str | Path, dest: str | Path) -> int:
    """The evidence rows of a written detection (``_table=evidence`` under its root, then
    removed) as one Parquet file ``dest/evidence.parquet`` in the table's own schema, rows
    sorted (a re-run writes the same bytes); pyarrow only. Returns the row count."""
    source = Path(detection_root) / "_table=evidence"
    parts = [pq.read_table(f, coerce_int96_timestamp_unit="us")  # far instants
             for f in sorted(source.glob("*.parquet"))] \
        if source.is_dir() else []
    schema = arrow_schema()
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    if parts:
        t = pa.concat_tables(parts, promote_options="permissive")
        for name, target in TRANSPORT.items():
            col = t[name]
            if target == "idempotent":
                col = pc.not_equal(col, 0)
            columns[target] = col.cast(schema.field(target).type)
        table = pa.table({f.name: columns[f.name] for f in schema}, schema=schema)
        table = table.sort_by([(c, "ascending") for c in SORT], null_placement="at_start")
    else:
        table = schema.empty_table()
    shutil.rmtree(dest, ignore_errors=True)
    Path(dest).mkdir(parents=True)
    pq.write_table(table, str(Path(dest) / FILE))
    shutil.rmtree(source, ignore_errors=True)
    return table.num_rows
