"""The GX plumbing: one ephemeral context per process, suite runs on pandas, failure summaries."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

log = logging.getLogger("delivery_audit.quality")

_MAX_EXAMPLES = 5


def _pandas(rows: list[dict[str, Any]], columns: Iterable[str]):
    """A pandas frame of these rows; numeric columns as nullable Int64/Float64 so a missing
    value stays a null (GX skips it) and an integer stays an integer."""
    import pandas as pd  # with GX only: the audit imports this module, not always GX

    columns = list(columns)
    pdf = pd.DataFrame(rows, columns=columns)
    for c in columns:
        values = [r.get(c) for r in rows]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            pdf[c] = pd.array(values, dtype="Int64")
        elif not present or all(isinstance(v, int | float) and not isinstance(v, bool)
                                for v in present):
            pdf[c] = pd.array(values, dtype="Float64")
    return pdf


class _Runner:
    """One ephemeral GX context with a pandas data source, shared by every validation of
    the process; each run adds uniquely named objects and removes them when done."""

    def __init__(self) -> None:
        # GX costs ~9 s to import (-X importtime): here, in prepare_in_background's thread
        # overlapping the JVM's start, never on the CLI's import path
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        try:
            self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
            self.context.enable_analytics(False)
        except Exception:  # noqa: BLE001 - cosmetic only
            pass
        self.data_source = self.context.data_sources.add_pandas(name="delivery_audit")
        self._lock = threading.Lock()
        self._runs = 0

    def run(self, label: str, expectations: list[dict], pdf: Any, parameters: dict[str, Any],
            index_columns: list[str]) -> Any:
        """Validate ``pdf`` against these expectations (result format COMPLETE, unexpected
        rows named by ``index_columns``)."""
        from great_expectations.core.expectation_suite import ExpectationSuite  # GX: see above

        with self._lock:
            self._runs += 1
            name = f"{label}-{self._runs}"
            asset = self.data_source.add_dataframe_asset(name=name)
            try:
                batch_definition = asset.add_batch_definition_whole_dataframe(f"{name}-whole")
                suite = self.context.suites.add(ExpectationSuite(name=name,
                                                                 expectations=expectations))
                vd = self.context.validation_definitions.add(
                    self.gx.ValidationDefinition(name=name, data=batch_definition, suite=suite))
                try:
                    return vd.run(batch_parameters={"dataframe": pdf},
                                  expectation_parameters=parameters,
                                  result_format={"result_format": "COMPLETE",
                                                 "unexpected_index_column_names": index_columns,
                                                 "partial_unexpected_count": _MAX_EXAMPLES})
                finally:
                    self.context.validation_definitions.delete(name)
                    self.context.suites.delete(name)
            finally:
                self.data_source.delete_asset(name)


_RUNNER: _Runner | None = None
_RUNNER_LOCK = threading.Lock()


def _runner() -> _Runner:
    """The process's GX runner, created on first use."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = _Runner()
        return _RUNNER


_PREPARING: threading.Thread | None = None


def prepare_in_background() -> None:
    """Import GX and make its context in a thread, once per process: seconds of Python
    imports that overlap the Spark JVM's start (call it before the session) instead of
    adding to the audit (the first validation waits for it through the runner's lock)."""
    global _PREPARING

    def prepare() -> None:
        try:
            _runner()
        except Exception:  # noqa: BLE001 - the validation itself raises it, in its place
            log.debug("preparing GX in the background failed", exc_info=True)

    with _RUNNER_LOCK:
        if _PREPARING is not None or _RUNNER is not None:
            return
        _PREPARING = threading.Thread(target=prepare, name="gx-prepare", daemon=True)
    _PREPARING.start()


def plain(value: Any) -> Any:
    """JSON-safe, short (numpy and pandas scalars as Python values, NaN/NA as None)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return plain(value.item())
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return str(value)


def _whole(value: Any) -> Any:
    """An integral float as an int (3.0 → 3), anything else unchanged."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _summarise(vr: Any, facts: list[dict[str, Any]], index_columns: list[str],
               parameters: dict[str, Any]) -> dict[str, Any]:
    """A failed expectation for people: which metric, the observed value(s), the allowed
    range, why it matters, and the rows (topic, or check/subject) that broke it."""
    cfg = vr.expectation_config
    meta = {k: v for k, v in (cfg.meta or {}).items() if not k.startswith("_")}
    kwargs = {k: plain(v) for k, v in (cfg.kwargs or {}).items() if k != "batch_id"}
    result = dict(vr.result or {})
    out: dict[str, Any] = {"expectation": cfg.type}
    column = kwargs.get("column")
    if column:
        out["metric"] = column
    if meta.get("why"):
        out["why"] = meta["why"]
    if "min_value" in kwargs or "max_value" in kwargs:  # GX gives them back as floats
        out["allowed"] = {"min": _whole(kwargs.get("min_value")),
                          "max": _whole(kwargs.get("max_value"))}
    one_row = len(facts) == 1 and index_columns == ["source"]
    where = plain(result.get("unexpected_index_list") or [])[:_MAX_EXAMPLES]
    if column and one_row:
        out["observed"] = plain(facts[0].get(column))
    elif column and len(index_columns) == 1:
        out["observed"] = {str(w.get(index_columns[0])): w.get(column) for w in where}
    out["kwargs"] = kwargs
    for k in ("element_count", "unexpected_count", "observed_value", "details"):
        if result.get(k) is not None and not (one_row and k.endswith("_count")):
            out[k] = plain(result[k])
    if result.get("partial_unexpected_list") and not one_row:
        out["examples"] = plain(result["partial_unexpected_list"][:_MAX_EXAMPLES])
    if where and not one_row:
        out["where"] = where
    context = meta.get("context") or []
    if context and one_row:
        out["context"] = {name: plain(facts[0].get(name, parameters.get(name)))
                          for name in context}
    info = vr.exception_info or {}
    if info.get("raised_exception"):
        out["exception"] = str(info.get("exception_message"))
    return out


def validate_tables(label: str, suite: dict, tables: dict[str, tuple[list[dict], list[str]]],
                    parameters: dict[str, Any]) -> dict[str, Any]:
    """Run a suite whose expectations name their table in ``meta.table`` (default
    "metrics") over ``tables`` ({table: (rows, index columns)}), one GX validation per
    table; failures in suite order."""
    t0 = time.monotonic()
    indexed = [dict(e, meta={**(e.get("meta") or {}), "_index": i})
               for i, e in enumerate(suite.get("expectations") or [])]
    results: list[tuple[int, Any, str]] = []  # (suite position, result, table)
    for table, (rows, index_columns) in tables.items():
        exps = [e for e in indexed if (e["meta"].get("table") or "metrics") == table]
        if not exps:
            continue
        columns = dict.fromkeys(index_columns)
        for r in rows:
            columns.update(dict.fromkeys(r))
        for e in exps:
            kw = e.get("kwargs") or {}
            columns.update(dict.fromkeys(c for c in (kw.get("column"), kw.get("column_A"),
                                                      kw.get("column_B")) if c))
        res = _runner().run(f"{label}-{table}", exps, _pandas(rows, columns), parameters,
                            index_columns)
        results += [(int(r.expectation_config.meta.get("_index", -1)), r, table)
                    for r in res.results]
    results.sort(key=lambda x: x[0])
    failed = [_summarise(r, *tables[table], parameters)
              for _, r, table in results if not r.success]
    evaluated = len(results)
    statistics = {"evaluated_expectations": evaluated,
                  "successful_expectations": evaluated - len(failed),
                  "unsuccessful_expectations": len(failed),
                  "success_percent": 100.0 * (evaluated - len(failed)) / evaluated
                  if evaluated else None}
    return {"success": not failed, "failed": failed, "statistics": statistics,
            "seconds": round(time.monotonic() - t0, 3), "parameters": plain(parameters)}
