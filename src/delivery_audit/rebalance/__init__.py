"""Rebalances and advice (contract §5).

Per judged group:

* **timeline** — from the group's events (``group_events.TIMELINE_EVENTS``: assigned /
  revoked / lost / commit_failed / left_group / joined_group), or, when the group has
  none, inferred from member changes on a partition in the ledger. A rebalance opens at
  the first disruptive event (revoke, loss, failed commit, leave, join) and ends at the
  last ``assigned`` of the wave that follows; the next disruptive event after that wave
  opens the next rebalance. A failed commit, revoke or loss by a member that already
  left and has not been given partitions again is the zombie's late discovery of the
  previous rebalance: it is counted there (``zombie_events``), not as a new rebalance.
  An assignment wave with no disruption before it while nobody owned partitions is the
  group's start (kind ``initial``), and a final wave of revokes/leaves with no new
  assignment is the group stopping (kind ``stop``): both listed, neither counted.
* **evictions** — each member that left (``left_group``, ``lost``, or revoked and not
  given partitions again), diagnosed ``poll_interval_exceeded`` (its leave says poll
  timeout, or before leaving: a gap between consecutive processing starts, one attempt,
  or up to ``max.poll.records`` back-to-back attempts took longer than
  ``max.poll.interval.ms``), ``session_timeout`` (the coordinator says it failed /
  heartbeat expired, or it was silent longer than ``session.timeout.ms``), else
  ``left`` (a voluntary or unexplained leave).
* **redeliveries_linked** — successful reprocessings (the ``redelivery`` rows of the
  anomaly table: rule 15, judged identities) whose second processing started at or
  after a rebalance's start, and whose first processing started no earlier than one
  ``max.poll.interval.ms`` before it (the batch the rebalance interrupted); each is
  linked to the latest such rebalance.
* **advice** — p99 per-record processing time (finished_ts − started_ts of successful
  attempts, ``percentile_approx``) × ``max.poll.records`` against
  ``max.poll.interval.ms``; the largest safe ``max.poll.records`` is
  ``floor(max.poll.interval.ms / 2 / p99)``; ``heartbeat.interval.ms ≤
  session.timeout.ms / 3``.

Only compact results reach the driver: events are collapsed per (member, event,
timestamp) and runs of failed commits per member are collapsed to one row.

Two Spark actions in all, each collecting small tables at once (``collect.collect_all``):

1. ``rebalance_tables`` (sources.py: processing stats, compact events, ledger handovers)
   → ``cluster_groups`` (timeline.py): the state machine on the driver;
2. ``rebalance_round2_tables`` (report.py: evidence before each leave, diagnosis.py;
   redeliveries linked to the counted rebalances, linking.py) → ``build_rebalance_report``
   (report.py; the advice: advice.py, the settings it reads: settings.py).

``rebalance_report`` runs both; a caller that collects other tables too can put round 1
into its own ``collect_all`` and call the steps itself (the audit takes the processing
stats and handovers from detection's output and collects ``rebalance_event_tables`` with
detection's write).
"""

from __future__ import annotations

from .advice import advice
from .report import build_rebalance_report, rebalance_report, rebalance_round2_tables
from .settings import group_settings, rebalance_settings
from .sources import rebalance_event_tables, rebalance_tables
from .timeline import cluster_groups

__all__ = [
    "advice",
    "build_rebalance_report",
    "cluster_groups",
    "group_settings",
    "rebalance_event_tables",
    "rebalance_report",
    "rebalance_round2_tables",
    "rebalance_settings",
    "rebalance_tables",
]
