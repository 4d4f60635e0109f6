"""The rules of format ``mapping`` (``adapters.mapping.<source>``), read and checked before
any line is: a rule that cannot work (a bad regex, a field name that is no canonical field
of the source, a named group that is none, a rule with neither ``regex`` nor ``json``, a
malformed ``map``, ``set``, ``copy``, ``when`` or ``time_format``) is a
:class:`MappingError` naming the rule (``adapters.mapping.sends[1]``).

A rule (docs/adapters.md "Your own application logs")::

    regex: 'Sent message=\\[(?P<value>[^\\]]*)\\] with offset=\\[(?P<offset>\\d+)\\]'
    json: {send_ts: "@timestamp", key: "kafka.key"}   # field -> dotted path in the line's object
    regex: {message: 'offset=(?P<offset>\\d+)'}       # with json: patterns over the object's fields
    when: {logger_name: com.example.Sender}           # with json: the object must hold these values
    set: {status: acked, topic: orders}               # constants
    map: {status: {OK: acked, ERROR: failed, "*": failed}}   # value maps ("*": anything else)
    copy: {ack_ts: send_ts}                           # a field takes another's value
    time_format: "%Y-%m-%d %H:%M:%S.%f"               # strptime, or {field: format}

Named groups and paths name canonical fields (contract §2, ``fields.FIELDS``) or ``value``:
the record's value, from which ``adapters.seq`` takes the seq when the rule gives none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..fields import FIELDS, SOURCES

VALUE = "value"  # not a canonical field: the record's value, read by adapters.seq
RULE_KEYS = ("regex", "json", "when", "set", "map", "copy", "time_format")
ANY = "*"  # the map key for any other value


class MappingError(ValueError):
    """A malformed ``adapters.mapping``: raised before any line is read."""


def norm(value: Any) -> str:
    """A value as maps and ``when`` compare it: JSON/YAML true/false/null and numbers as
    their JSON text, strings as written."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass
class Rule:
    name: str  # "sends[0]": the source and the rule's index in its list
    source: str
    regex: re.Pattern[str] | None = None  # over the line (a regex rule)
    field_regex: dict[str, re.Pattern[str]] = field(default_factory=dict)  # path -> pattern
    paths: dict[str, str] = field(default_factory=dict)  # field -> dotted path
    when: dict[str, tuple[str, ...]] = field(default_factory=dict)  # path -> allowed values
    constants: dict[str, Any] = field(default_factory=dict)
    maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)  # field -> the field it copies
    time_formats: dict[str, str] = field(default_factory=dict)  # time field -> strptime

    @property
    def is_json(self) -> bool:
        return self.regex is None

    @property
    def kind(self) -> str:
        return "json" if self.is_json else "regex"

    def groups(self) -> set[str]:
        names: set[str] = set()
        for pattern in [self.regex, *self.field_regex.values()]:
            if pattern is not None:
                names |= set(pattern.groupindex)
        return names


def _time_fields(source: str) -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS[source] if f.kind == "timestamp")


class _Check:
    """Validation of one rule, every message naming it."""

    def __init__(self, source: str, index: int) -> None:
        self.source = source
        self.where = f"adapters.mapping.{source}[{index}]"
        self.fields = tuple(f.name for f in FIELDS[source])

    def fail(self, what: str) -> MappingError:
        return MappingError(f"{self.where}: {what}")

    def field_name(self, name: Any, what: str, value_ok: bool = False) -> str:
        if not isinstance(name, str) or not (name in self.fields or
                                             (value_ok and name == VALUE)):
            extra = f", or {VALUE}" if value_ok else ""
            raise self.fail(f"{what} {name!r} is no {self.source} field (one of "
                            f"{', '.join(self.fields)}{extra})")
        return name

    def table(self, data: Any, what: str) -> dict:
        if not isinstance(data, dict) or not data:
            raise self.fail(f"{what} must be a non-empty mapping, not {data!r}"[:300])
        return data

    def pattern(self, text: Any, what: str) -> re.Pattern[str]:
        if not isinstance(text, str) or not text:
            raise self.fail(f"{what} must be a regular expression (a string), not {text!r}")
        try:
            compiled = re.compile(text)
        except re.error as exc:
            raise self.fail(f"bad regex {text!r}: {exc}") from exc
        for group in compiled.groupindex:
            self.field_name(group, "named group", value_ok=True)
        return compiled

    def scalar(self, value: Any, what: str) -> Any:
        if isinstance(value, dict | list):
            raise self.fail(f"{what} must be a plain value, not {value!r}"[:300])
        return value


def _rule(source: str, index: int, data: Any) -> Rule:
    c = _Check(source, index)
    if not isinstance(data, dict):
        raise c.fail(f"a rule is a mapping with regex: or json:, not {data!r}"[:300])
    unknown = [k for k in data if k not in RULE_KEYS]
    if unknown:
        raise c.fail(f"unknown key(s) {', '.join(map(repr, unknown))} (a rule has "
                     f"{', '.join(RULE_KEYS)})")
    if "regex" not in data and "json" not in data:
        raise c.fail("a rule needs regex: (a pattern over the line) or json: (paths in the "
                     "line's JSON object)")
    rule = Rule(f"{source}[{index}]", source)
    given: dict[str, str] = {}  # field -> what gives it

    def give(name: str, by: str) -> None:
        if name in given:
            raise c.fail(f"field {name!r} given twice ({given[name]} and {by})")
        given[name] = by

    if "json" in data:
        for name, path in c.table(data["json"], "json").items():
            c.field_name(name, "json field", value_ok=True)
            if not isinstance(path, str) or not path:
                raise c.fail(f"json path of {name!r} must be a dotted path (a string), "
                             f"not {path!r}")
            rule.paths[name] = path
            give(name, f"json path {path!r}")
    regex = data.get("regex")
    if isinstance(regex, dict):
        if "json" not in data:
            raise c.fail("regex: {path: pattern} reads fields of a JSON object: give json: "
                         "too (json: {} when the patterns give every field)")
        for path, text in c.table(regex, "regex").items():
            if not isinstance(path, str) or not path:
                raise c.fail(f"regex path {path!r} must be a dotted path")
            rule.field_regex[path] = c.pattern(text, f"regex of {path!r}")
    elif regex is not None:
        if "json" in data:
            raise c.fail("a rule has regex: (over the line) or json:, not both; with json:, "
                         "regex: {path: pattern} reads the object's fields")
        rule.regex = c.pattern(regex, "regex")
    for name in sorted(rule.groups()):
        give(name, f"named group {name!r}")
    if "when" in data:
        if not rule.is_json:
            raise c.fail("when: narrows json rules (a regex rule matches by its pattern)")
        for path, wanted in c.table(data["when"], "when").items():
            values = wanted if isinstance(wanted, list) else [wanted]
            rule.when[str(path)] = tuple(norm(c.scalar(v, f"when value of {path!r}"))
                                         for v in values)
    if "set" in data:
        for name, value in c.table(data["set"], "set").items():
            c.field_name(name, "set field")
            rule.constants[name] = c.scalar(value, f"set value of {name!r}")
            give(name, "set")
    if "map" in data:
        for name, table in c.table(data["map"], "map").items():
            c.field_name(name, "map field", value_ok=True)
            if not isinstance(table, dict) or not table:
                raise c.fail(f"map of {name!r} must be a non-empty mapping of values "
                             f"({{OK: acked}}), not {table!r}"[:300])
            if not given.get(name, "").startswith(("json path", "named group")):
                raise c.fail(f"map of {name!r}: the rule does not read {name!r} (no named "
                             "group or json path gives it)")
            rule.maps[name] = {norm(k): c.scalar(v, f"map value of {name!r}")
                               for k, v in table.items()}
    if "copy" in data:
        for name, origin in c.table(data["copy"], "copy").items():
            c.field_name(name, "copy field")
            c.field_name(origin, f"copy of {name!r} from")
            give(name, f"copy of {origin!r}")
            rule.copies[name] = origin
    _time_formats(c, rule, data.get("time_format"))
    return rule


def _time_formats(c: _Check, rule: Rule, spec: Any) -> None:
    times = _time_fields(c.source)
    if spec is None:
        return
    if isinstance(spec, str):
        spec = dict.fromkeys(times, spec)
    elif isinstance(spec, dict) and spec:
        for name in spec:
            if c.field_name(name, "time_format field") not in times:
                raise c.fail(f"time_format field {name!r} is not a time ({', '.join(times)})")
    else:
        raise c.fail(f"time_format must be a strptime format or {{field: format}}, "
                     f"not {spec!r}")
    probe = datetime(2024, 1, 16, 23, 0, 1, 123000)
    for name, fmt in spec.items():
        if not isinstance(fmt, str) or "%" not in fmt:
            raise c.fail(f"time_format {fmt!r} is no strptime format (e.g. "
                         "'%Y-%m-%d %H:%M:%S.%f')")
        try:
            datetime.strptime(probe.strftime(fmt), fmt)
        except ValueError as exc:
            raise c.fail(f"bad time_format {fmt!r}: {exc}") from exc
        rule.time_formats[name] = fmt


def parse_mapping(mapping: Any) -> dict[str, list[Rule]]:
    """Every source's rules of ``adapters.mapping``, checked (MappingError naming the rule)."""
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise MappingError(f"adapters.mapping must map sources to lists of rules, not "
                           f"{mapping!r}"[:300])
    out: dict[str, list[Rule]] = {}
    for source, rules in mapping.items():
        if source not in SOURCES:
            raise MappingError(f"adapters.mapping.{source}: no such source (one of "
                               f"{', '.join(SOURCES)})")
        if isinstance(rules, dict):
            rules = [rules]  # one rule without the list
        if not isinstance(rules, list) or not rules:
            raise MappingError(f"adapters.mapping.{source} must be a list of rules "
                               "(regex: or json:), the first that matches a line wins")
        out[source] = [_rule(source, i, r) for i, r in enumerate(rules)]
    return out


def rules_for(raw_adapters: dict[str, Any], source: str) -> list[Rule]:
    """The rules of ``source`` (the whole mapping checked first), or MappingError when the
    config has none for it."""
    rules = parse_mapping(raw_adapters.get("mapping")).get(source)
    if not rules:
        raise MappingError(f"format mapping needs rules for {source}: adapters.mapping."
                           f"{source} in the audit config (or convert --option "
                           f"'mapping.{source}=[{{\"regex\": \"…\"}}]'); see docs/adapters.md "
                           "\"Your own application logs\"")
    return rules
