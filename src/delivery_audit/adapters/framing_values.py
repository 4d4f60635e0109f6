"""Values of structured log events (framing's JSON-structured lines and CSV exports): the
usual field names of a log event's time, message, logger, thread and level, a field by its
flat or dotted name, and a time in any of the usual forms as the ISO text a log line can
start with."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ISO = (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
       r"(?:Z|[+-]\d{2}:?\d{2})?")
KIBANA_FMT = "%b %d, %Y @ %H:%M:%S.%f"

TIME_KEYS = ("@timestamp", "timestamp", "time", "@t", "ts", "date", "datetime", "_time", "asctime",
              "timeMillis", "instant", "eventtime", "event_time")
MESSAGE_KEYS = ("message", "msg", "@message", "@m", "log", "short_message", "_raw",
                 "line", "content", "text", "full_message", "@mt")
LOGGER_KEYS = ("logger_name", "loggerName", "logger", "log.logger", "_logger_name",
                "loggername", "class")
THREAD_KEYS = ("thread_name", "threadName", "thread", "process.thread.name",
                "_thread_name", "threadname")
LEVEL_KEYS = ("level", "log.level", "severity", "levelname", "loglevel", "@l")


def _nested(obj: dict[str, Any], dotted: str) -> Any:
    """A field by its flat name (ECS writes ``"log.level"``) or its dotted path."""
    if dotted in obj:
        return obj[dotted]
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {k.lower(): v for k, v in obj.items()}
    for key in keys:
        value = _nested(obj, key)
        if value is None:
            value = lowered.get(key.lower())
        if value is not None and value != "":
            return value
    return None


def iso_time(value: Any) -> str | None:
    """A timestamp a log line can start with (ISO-8601, read by LogClock), from the usual
    forms of a log platform: ISO (with or without a zone), epoch seconds or milliseconds
    (a number or a digit string), log4j2's ``instant``, Kibana's ``Jan 17, 2020 @ …``."""
    ms: int | None = None
    if isinstance(value, dict) and "epochSecond" in value:  # log4j2 JsonLayout instant
        try:
            ms = int(value["epochSecond"]) * 1000 + int(value.get("nanoOfSecond", 0)) // 10**6
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d{9,13}(?:\.\d+)?", text):
            value = float(text) if "." in text else int(text)
        else:
            m = re.match(ISO, text)
            if m:
                return m.group(0)
            try:
                dt = datetime.strptime(text, KIBANA_FMT)
            except ValueError:
                return None
            return dt.isoformat(timespec="milliseconds")
    if ms is None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        ms = round(value) if value > 1e11 else round(value * 1000)  # ms, else seconds
    try:
        dt = EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sort_key(iso: str | None) -> float | None:
    if iso is None:
        return None
    text = iso.replace(" ", "T").replace(",", ".")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)  # only the order matters: one zone for the file
    return dt.timestamp()

