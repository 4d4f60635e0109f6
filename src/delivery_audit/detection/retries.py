"""retry_after_failure (rule 18): an attempt whose immediately preceding attempt on the
same record, by the same group, failed. Expected behaviour, reported as info.

Decided in the consumer pass (consumer.py), whose per-record window gives every attempt
the outcome, start and member of the resolved attempt just before it."""

from __future__ import annotations

from .. import sqlexpr as S
from ..sqlexpr import X
from .evidence import KEY, anomaly_struct


def retry_after_failure() -> tuple[X, X]:
    return (S.col("resolved") & S.col("judged") & (S.col("prev_outcome") == "failure"),
            anomaly_struct("retry_after_failure", group_id="group_id", topic="topic", key=KEY,
                           seq="seq", partition="partition", offset="offset",
                           member_id="member_id", related_member_id="prev_member",
                           ts="started_ts", related_ts="prev_started", attempts="res_no",
                           detail=S.concat(S.lit("this attempt: "), S.col("outcome"))))
