"""retry_after_failure (rule 18): an attempt whose immediately preceding attempt on the
same record, by the same group, failed. Expected behaviour, reported as info."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .evidence import anomaly_rows, key_value
from .identity import ID
from .prepared import Prepared


def retry_after_failure(p: Prepared) -> DataFrame:
    w = Window.partitionBy("group_id", "topic", "partition", "offset").orderBy(
        "started_ts", "finished_ts")
    hit = (
        p.ledger.filter(F.col("resolved"))
        .select("group_id", *ID, "partition", "offset", "member_id", "started_ts", "outcome",
                "judged",
                F.lag("outcome").over(w).alias("prev_outcome"),
                F.lag("started_ts").over(w).alias("prev_started_ts"),
                F.lag("member_id").over(w).alias("prev_member_id"),
                F.row_number().over(w).alias("attempt_no"))
        .filter(F.col("judged") & (F.col("prev_outcome") == "failure"))
    )
    return anomaly_rows(hit, "retry_after_failure", group_id="group_id", topic="topic",
                        key=key_value(), seq="seq", partition="partition", offset="offset",
                        member_id="member_id", related_member_id="prev_member_id",
                        ts="started_ts", related_ts="prev_started_ts", attempts="attempt_no",
                        detail=F.concat(F.lit("this attempt: "), F.col("outcome")))
