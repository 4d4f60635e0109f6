"""Great Expectations (1.x) suites over small aggregates: no Spark job of their own.

Each input source is reduced to ONE row of metrics inside a Spark aggregation the audit already
runs (``metric_tally``: counts of rows with timestamps outside the plausible range, of
acks before their send, of null keys …, all built-in Spark functions). The driver adds the
ingestion figures (``rows_read``, ``rows_quarantined``, ``duplicates_quarantined``,
``by_topic``), derives shares from them, and GX validates those few numbers with a pandas
data source: the suite ``<source>.json`` over the metric row (and, for expectations whose
``meta.table`` is ``"by_topic"``, over one row per topic the config names), and
``results.json`` over the report's small results table (``results_rows``).

Strict parsing (contract §2, §8) already guarantees required fields, enum values,
non-negative partitions/offsets, partition/offset of acked sends and unique broker offsets
on the valid rows; the suites check only what can still be wrong on valid rows.

Suite parameters (``$PARAMETER``): ``ts_min`` / ``ts_max`` (the plausible timestamp range:
window start − 3650 days, never before 2000-01-01, to read_until + 366 days; applied when the
metrics are aggregated) and the thresholds in ``THRESHOLD_DEFAULTS``; ``config.raw["quality"]``
overrides any of them. One ephemeral GX context serves the whole process (``_runner``); each
validation adds its own uniquely named asset, suite and validation definition, and removes
them afterwards.

The suites ship with the engine as package data (``delivery_audit/expectations/``, in the
source tree a link to the top-level ``expectations/`` folder, their one copy) and are found by
``suites.expectations_dir`` alone; the config's ``quality.expectations_dir`` overrides it.

Modules: ``suites`` (locating and loading the suites, their parameters), ``metrics`` (the
Spark aggregates), ``runner`` (the GX plumbing), ``inputs`` (the input suites), ``results``
(the results suite).
"""

from .inputs import VOLUME_SOURCES, expected_topics, source_facts, topic_facts, validate_inputs
from .metrics import (
    NULL_COUNTED,
    ORDERED_PAIRS,
    TIMESTAMP_COLUMNS,
    input_metrics,
    metric_aggregates,
    metric_names,
    metric_tally,
)
from .results import RESULTS_COLUMNS, results_rows, validate_results, write_results
from .runner import prepare_in_background
from .suites import (
    INPUT_SUITES,
    RESULTS_SUITE,
    THRESHOLD_DEFAULTS,
    expectations_dir,
    load_suite_dict,
    suite_parameters,
    thresholds,
    timestamp_bounds,
)

__all__ = [
    "INPUT_SUITES", "NULL_COUNTED", "ORDERED_PAIRS", "RESULTS_COLUMNS", "RESULTS_SUITE",
    "THRESHOLD_DEFAULTS", "TIMESTAMP_COLUMNS", "VOLUME_SOURCES", "expectations_dir",
    "expected_topics", "input_metrics", "load_suite_dict", "metric_aggregates", "metric_names",
    "metric_tally", "prepare_in_background", "results_rows", "source_facts",
    "suite_parameters", "thresholds", "timestamp_bounds", "topic_facts", "validate_inputs",
    "validate_results", "write_results",
]
