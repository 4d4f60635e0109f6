"""Line framing: the log line inside what surrounds it when people collect or paste logs.

The text-log adapters (client_log, coordinator_log, …) read their input through
:func:`framed_lines` instead of ``open_lines``. It yields ``(line number, log line)`` with
the original line numbers (for ``__line`` and the line accounting) and:

* strips ANSI colours and the prefixes that wrap a line: ``docker compose`` service
  prefixes (``kafka_1  | ``, ``kafka-1  | ``), ``kubectl logs --prefix``
  (``[pod/name/container] ``), ``grep -r``/``grep -H``/``grep -n`` file names
  (``server.log.2024-01-16-23:``, ``logs/server.log:1234:``), syslog
  (``Oct 14 00:14:53 host kafka[123]: ``, RFC 5424 ``2024-…T…Z host kafka[123]: ``) and
  the second timestamp of a log viewer or ``docker logs -t``
  (``2024-01-16T23:00:01.123Z <the original line>``). The inner (original) timestamp wins;
  a line without one keeps the outer timestamp (syslog's without its day: as a time-only
  line, the day comes from ``adapters.date`` or the audit window);
* turns a JSON-structured log line (logstash, ECS, Quarkus, GELF, log4j2 JSON, Docker's
  json-file) into ``<timestamp> [<thread>] <LEVEL> <logger> - <message>``;
* reads a CSV export of a log platform (quoted columns; a header naming the time and
  message columns, or none: then the first timestamp column and the last column) and
  yields its events in time order (exports are often newest first), each with the line
  number of its record; the header is skipped as ``csv_header``;
* skips the lines of a stack trace (``\\tat …``, ``Caused by: …``, ``... 12 more``) as
  ``stack_trace`` and a log viewer's timestamp alone on its line (Kibana's
  ``Jan 17, 2020 @ 15:54:24.877``) as ``viewer_timestamp``;
* drops a log4j location tail ``(org.apache.kafka….ConsumerCoordinator:123)`` so that it
  does not end up in a partition list.

Lines are framed one at a time (bounded memory), except CSV exports, which are read whole
to be sorted (log platforms cap their exports at a few thousand rows).

Modules: one physical line's framing (prefixes, JSON-structured events, stack traces,
log4j tails) is in framing_lines.py, the values of structured events (field names, times)
in framing_values.py, CSV exports in framing_csv.py; this module picks the layout of a
file and yields its framed lines.
"""

from __future__ import annotations

from collections.abc import Iterator

from .framing_csv import chain, csv_layout, framed_csv
from .framing_lines import Framed, FramedLine, drop_tail, frame_text, from_json
from .framing_values import iso_time
from .lines import open_lines
from .writer import RowWriter

__all__ = ["Framed", "FramedLine", "csv_layout", "drop_tail", "frame_text", "framed_lines",
           "from_json", "iso_time"]


def framed_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str]]:
    """(line number, the log line) of a text log file, framed (see the module's doc).
    Lines that are no log line (a stack frame, a viewer's timestamp, a CSV header) are
    skipped on ``w`` with their kind and not yielded."""
    lines = open_lines(path, w)
    pending: list[tuple[int, str]] = []
    for n, line in lines:
        pending.append((n, line))
        if line.strip():
            break
    if pending and pending[-1][1].strip():
        layout = csv_layout(pending[-1][1].lstrip("\ufeff"))
        if layout is not None:
            for n, _ in pending[:-1]:
                w.skip(n, "blank")
            yield from framed_csv(layout, lines, pending[-1:], w)
            return
    for n, line in chain(pending, lines):
        framed = frame_text(line)
        if framed.text is None:
            w.skip(n, framed.skip or "unrelated_log_line")
            continue
        yield n, FramedLine(framed.text, line)
