"""``delivery-audit explain``: the story of one message or record, told from a published
report folder alone (pyarrow and the report's JSON; no Spark).

A story is one identity (topic, key, seq) with its send attempts, its broker copies, every
processing by every judged group (member, times, outcome), the anomaly rows that name it
with their evidence, and what happened in its groups around it: the group events on its
partitions (the evidence table's ``events`` rows), the rebalances of report.json's
timeline that touched its partitions, and the evictions. A rebalance is tied to two
processings of a group the way the report links redeliveries to rebalances
(rebalance/linking.py): it began before the later one, and no more than
``max.poll.interval.ms`` before the earlier one.

Where it reads: ``evidence/`` (detection/evidence_table.py: the source rows of the
identities the anomalies name, and their groups' events), ``anomalies/`` and
``report.json``, from a folder or ``s3://`` (through the manifest, every file checked
against its sha256). A message that no anomaly names is not in the evidence: that is said
plainly, not shown as an empty story.

The modules, in the order a question goes through them:

- ``reading``: the published folder (local or ``s3://``) as pyarrow tables and report.json;
- ``selecting``: the question (a message or a record) and the identities it names;
- ``composing``: one identity's story (its rows, anomalies, events, rebalances, evictions);
- ``answering``: the stories a question names, or why there is none;
- ``printing``: the answer as rich text; ``text``: how instants, durations and JSON
  values are written.
"""
