"""Consumer-group event kinds (the ``event`` column of the events source), listed once.

Every rule that reads group events takes its kinds from here:

* ``REDELIVERY_EVENTS`` — rule 15 (detection/redelivery.py): a repeated success by the
  same member is caused by a ``rebalance`` when one of these lies between the two starts.
* ``TIMELINE_EVENTS`` — contract §5 (rebalance/): the events a group's rebalance
  timeline is built from; ``DISRUPTIVE_EVENTS`` (all of them but ``assigned``) open a
  rebalance, and ``ZOMBIE_EVENTS`` by a member that already left are its late discovery
  of the previous rebalance, not a new one.
* ``MARKER_EVENTS`` — the HTML report's rebalance markers (report/insights.py): per
  group and minute, drawn over the anomaly timeline.

``commit`` (a committed offset, rule 12) is not a rebalance event and is in none of them.
"""

from __future__ import annotations

REDELIVERY_EVENTS: tuple[str, ...] = ("assigned", "revoked", "lost", "commit_failed")
DISRUPTIVE_EVENTS: tuple[str, ...] = ("revoked", "lost", "commit_failed", "left_group",
                                      "joined_group")
TIMELINE_EVENTS: tuple[str, ...] = ("assigned", *DISRUPTIVE_EVENTS)
ZOMBIE_EVENTS: tuple[str, ...] = ("commit_failed", "revoked", "lost")
MARKER_EVENTS: tuple[str, ...] = ("revoked", "assigned", "lost", "left_group", "commit_failed")
