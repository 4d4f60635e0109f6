"""The HTML report: self-contained, inline SVG, every data value escaped."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pytest
from report_fixtures import EVIL, evil_insights, evil_report, make_report

from delivery_audit.anomaly_table import SCHEMA
from delivery_audit.report.html import render_html
from delivery_audit.report.offsets import partition_offsets


class Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Collector:
    c = Collector()
    c.feed(html)
    c.close()
    return c


def test_markup_in_data_is_escaped_and_no_script_element():
    html = render_html(evil_report(), evil_insights())
    parsed = parse(html)
    assert "script" not in parsed.tags
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # the text the browser shows is the literal markup (topic, group, member, key, reason)
    assert sum(EVIL in t for t in parsed.text) >= 6
    # no event-handler attributes or javascript: URLs from anywhere
    assert not [a for a, v in parsed.attrs if a.startswith("on")]
    assert not [v for _, v in parsed.attrs if v and "javascript:" in v.lower()]


def test_self_contained_with_inline_svg():
    html = render_html(evil_report(), evil_insights())
    parsed = parse(html)
    assert parsed.tags.count("svg") >= 4  # states, timeline, heat map, latency
    assert "style" in parsed.tags
    for tag in ("link", "img", "iframe", "object", "embed"):
        assert tag not in parsed.tags
    srcs = [v for a, v in parsed.attrs if a in ("src", "href")]
    assert not [s for s in srcs if s and s.startswith(("http:", "https:", "//"))]


def test_sections_present():
    html = render_html(evil_report(), evil_insights())
    for anchor in ('id="verdict"', 'id="anomalies"', 'id="topics"', 'id="groups"',
                   'id="timeline"', 'id="heatmap"', 'id="latency"', 'id="top-keys"',
                   'id="inputs"'):
        assert anchor in html
    assert "v-fail" in html
    for name in ("lost_acked", "dup_write", "retry_after_failure", "delivered_once"):
        assert name in html
    assert "rebalance events (1)" in html
    assert "(null key)" in html


def test_renders_without_insights_and_with_empty_report():
    html = render_html(make_report(), {})
    assert "PASS" in html and "No timeline data" in html
    html = render_html({"anomalies": {}, "verdict": {"verdict": "warn", "reasons": []}}, None)
    assert "WARN" in html



# --------------------------------------------------------------------------- the mixed day

MIXED_DAY = Path(__file__).parent / "data" / "report_mixed_day.json"
LONG = "x" * 150 + EVIL + "y" * 150  # a name no browser can break at a space


def mixed_day() -> tuple[dict, dict]:
    """report.json and the insights of `make demo`'s mixed day (20,000 messages, seed 7),
    as render_html received them: three topics, three groups, an eviction, advice."""
    data = json.loads(MIXED_DAY.read_text("utf-8"))
    return data["report"], data["insights"]


def with_long_names(report: dict, insights: dict) -> tuple[dict, dict]:
    """The same page with a topic, a group, a member and the keys renamed to long names."""
    text = json.dumps({"report": report, "insights": insights})
    for short, long in (("payments", "payments-" + LONG), ("billing", "billing-" + LONG),
                        ("consumer-2", "consumer-2-" + LONG), ("acct-", "acct-" + LONG)):
        text = text.replace(short, long)
    data = json.loads(text)
    return data["report"], data["insights"]


def narrative() -> list[dict]:
    """Findings in the narrative's shared schema (another module writes them)."""
    return [
        {"id": "f1", "severity": "critical", "at": "2026-11-19T16:29:11Z",
         "until": "2026-11-19T16:31:47Z", "cause": "eviction",
         "anomalies": {"redelivery": 101}, "group": "fans-push-service", "topic": "fans-push",
         "members": ["consumer-2", "consumer-1"],
         "title": "consumer-2 (fans-push-service) exceeded max.poll.interval.ms and was evicted",
         "text": "16:29:11 consumer-2 left after 750 s without a poll; 101 records were "
                 "processed twice by consumer-1.",
         "fix": "max.poll.records ≤ 98", "evidence": [{"label": "rebalances",
                                                       "href": "#rebalances"}]},
        {"id": "f2", "severity": "critical", "at": "2026-11-19T01:36:40Z", "until": None,
         "cause": "acks_loss", "anomalies": {"lost_acked": 4}, "group": None,
         "topic": "payments", "members": [], "title": "4 acknowledged messages lost " + LONG,
         "text": "…", "fix": None, "evidence": []},
        {"id": "f3", "severity": "warning", "at": None, "until": None, "cause": "lag",
         "anomalies": {"pending": 34}, "group": "shipping", "topic": "orders", "members": [],
         "title": "34 messages not yet processed", "text": "…", "fix": None, "evidence": []},
    ]


# --------------------------------------------------------------------------- sections


def section(html: str, anchor: str) -> str:
    """The page from id=anchor up to the next h2."""
    start = html.index(f'id="{anchor}"')
    end = html.find("<h2", start)
    return html[start:end if end > 0 else len(html)]


def anomaly_table(rows: list[dict]) -> pa.Table:
    full = [{**{f.name: None for f in SCHEMA}, "severity": "high", "units": 1, **r}
            for r in rows]
    return pa.Table.from_pylist(full, schema=SCHEMA)


def test_offset_strips_mark_where_records_sit():
    rows = [{"anomaly": "skipped", "group_id": EVIL, "topic": EVIL, "partition": 0,
             "offset": 600},
            {"anomaly": "skipped", "group_id": EVIL, "topic": EVIL, "partition": 0,
             "offset": 601},
            {"anomaly": "expired_unconsumed", "group_id": "g", "topic": EVIL, "partition": 0,
             "offset": 50},
            {"anomaly": "dup_write", "topic": EVIL, "partition": 0, "offset": 999},
            {"anomaly": "pending", "group_id": "g", "topic": EVIL, "partition": 0,
             "offset": 700},  # lag: not marked
            {"anomaly": "redelivery", "group_id": "g", "topic": "orders", "partition": 1,
             "offset": 5}]
    strips = partition_offsets(anomaly_table(rows), {(EVIL, 0): (100, 1050)}, bins=100)
    assert strips["partitions_total"] == 2
    p = next(p for p in strips["partitions"] if p["topic"] == EVIL)
    assert (p["lo"], p["hi"], p["log_start"], p["end"]) == (50, 1050, 100, 1050)
    lanes = {lane["anomaly"]: lane for lane in p["lanes"]}
    assert list(lanes) == ["expired_unconsumed", "skipped", "dup_write"]  # not pending
    (skipped,) = lanes["skipped"]["bins"]  # 600 and 601 share a bin of 10 offsets
    assert skipped == {"bin": 55, "units": 2, "from": 600, "to": 601, "groups": [EVIL],
                       "group_count": 1}
    assert lanes["expired_unconsumed"]["bins"][0]["bin"] == 0
    assert lanes["dup_write"]["bins"][0]["bin"] == 94
    html = render_html(make_report(), {"offsets": strips})
    part = section(html, "offsets")
    assert "below the log start offset 100: deleted by retention" in part
    assert f"skipped ({EVIL.replace('<', '&lt;').replace('>', '&gt;')})" in part
    assert "2 at offsets 600–601" in part and EVIL not in part
    assert part.count("<svg") == 2


def test_offset_strips_show_the_partitions_with_the_most_units():
    rows = [{"anomaly": "dup_write", "topic": "t", "partition": p, "offset": o}
            for p, n in ((0, 1), (1, 3), (2, 2)) for o in range(n)]
    strips = partition_offsets(anomaly_table(rows), max_partitions=2)
    assert [p["partition"] for p in strips["partitions"]] == [1, 2]
    html = render_html(make_report(), {"offsets": strips})
    assert "Showing the 2 partitions with the most lost, skipped or duplicated records of 3" \
        in html
    assert 'id="offsets"' not in render_html(make_report(), {})
    assert partition_offsets(anomaly_table([]))["partitions"] == []


def test_the_timeline_marks_the_narratives_findings():
    report, insights = mixed_day()
    report["narrative"] = [*narrative(), "not a finding", {"id": "f9", "at": "yesterday"}]
    part = section(render_html(report, insights), "timeline")
    assert part.count('<g class="finding">') == 2  # f1 and f2 have an `at`
    assert 'id="timeline-f1"' in part and 'id="timeline-f2"' in part
    assert 'id="timeline-f3"' not in part and 'id="timeline-f9"' not in part
    assert "f1 · 2026-11-19 16:29:11 UTC · critical" in part
    assert 'fill-opacity="0.10"' in part  # f1's until: a band
    assert LONG.replace("<", "&lt;").replace(">", "&gt;") in part
    plain = section(render_html(mixed_day()[0], insights), "timeline")
    assert '<g class="finding">' not in plain and "findings of the narrative" not in plain


def test_advice_and_evictions_are_shown_and_the_rebalance_list_folds():
    report, insights = mixed_day()
    part = section(render_html(report, insights), "rebalances")
    details = re.findall(r"<details.*?</details>", part, flags=re.S)
    outside = re.sub(r"<details.*?</details>", "", part, flags=re.S)
    assert outside.count('<table class="advice">') == 3
    assert outside.count('<table class="evictions">') == 2
    assert "poll_interval_exceeded" in outside and "floor(300,000 / 2 / 1,529) = 98" in outside
    assert len(details) == 3 and all("rebalance timeline" in d for d in details)


def test_group_rows_are_one_line_and_their_anomalies_a_matrix():
    report, insights = mixed_day()
    part = section(render_html(report, insights), "groups")
    states = part[part.index('<table class="states">'):part.index("</table>")]
    assert "<br>" not in states
    assert "Anomalies per group" in part
    matrix = part[part.index("Anomalies per group"):]
    assert "redelivery" in matrix and ">101<" in matrix  # fans-push-service's redeliveries


def test_remediation_section_links_the_files_and_shows_the_commands():
    report, insights = mixed_day()
    part = section(render_html(report, insights), "remediation")
    for href in ("remediation/replay.csv", "remediation/replay.parquet",
                 "remediation/dedupe.csv", "remediation/dedupe.parquet",
                 "remediation/commands.txt"):
        assert f'href="{href}"' in part
    assert ("--group billing --topic payments:1 --reset-offsets --to-offset 4283129 "
            "--dry-run") in part
    assert "max.poll.records=98" in part
    evil = copy.deepcopy(report)
    evil["remediation"]["offset_resets"][0]["group_id"] = EVIL
    part = section(render_html(evil, insights), "remediation")
    assert EVIL not in part
    assert "--group &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39; --topic" in part
    assert 'id="remediation"' not in render_html(make_report(), {})


# --------------------------------------------------------------------------- in a browser

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not shutil.which("chromium"),
    reason="chromium is not installed: no headless browser")
# what a test's copy of the page measures once loaded, written into the DOM for --dump-dom
MEASURE = """<script>
addEventListener("load", () => {
  const d = document.documentElement;
  const top = document.getElementById("narrative") || document.getElementById("narrative-slot");
  const wide = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (e.getBoundingClientRect().right > d.clientWidth + 0.5 && !e.closest(".scroll, .chart"))
      wide.push(`${e.tagName}.${e.className.baseVal ?? e.className}#${e.id}`);
  }
  const height = (sel) => [...document.querySelectorAll(sel)].map(
    (e) => e.getBoundingClientRect().height);
  const out = {scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, innerWidth,
               innerHeight, narrativeTop: top ? top.getBoundingClientRect().top : null,
               wide: wide.slice(0, 10), groupRows: height("table.states tr + tr"),
               adviceShown: height("table.advice").filter((h) => h > 0).length,
               findings: document.querySelectorAll("g.finding").length};
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    return CHROMIUM if os.path.exists(CHROMIUM) else str(shutil.which("chromium"))


def headless(tmp_path: Path, *args: str) -> str:
    out = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-quic", "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'profile'}", *args],
                         check=True, timeout=120, capture_output=True)
    return out.stdout.decode("utf-8", "replace")


def measure(tmp_path: Path, html: str) -> dict:
    """The page's measures at 1280 px wide (the window is taller than the viewport: its
    height holds the headless browser's frame)."""
    assert "<script" not in html.lower()  # the report itself has none; only this copy
    page = tmp_path / "measured.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = headless(tmp_path, "--window-size=1280,943", "--virtual-time-budget=5000",
                   "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, flags=re.S)
    assert found, dom[-2000:]
    got = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")
                     .replace("&lt;", "<").replace("&gt;", ">"))
    assert got["innerWidth"] == 1280, got
    return got


def assert_fits(got: dict) -> None:
    assert got["scrollWidth"] <= got["clientWidth"], f"overflows to the right: {got}"
    assert not got["wide"], got["wide"]
    # the narrative, right under the verdict, starts in the top part of the first screen
    assert got["narrativeTop"] is not None
    assert got["narrativeTop"] <= min(320, got["innerHeight"] * 0.45), got


@needs_chromium
@pytest.mark.audit
def test_mixed_day_fits_1280px_with_the_narrative_on_the_first_screen(tmp_path):
    report, insights = mixed_day()
    report["narrative"] = narrative()
    got = measure(tmp_path, render_html(report, insights))
    assert_fits(got)
    assert got["findings"] == 2
    # a group's row is one line (it was ~120 px with its anomalies listed in it)
    assert len(got["groupRows"]) == 3 and max(got["groupRows"]) <= 30, got["groupRows"]
    assert got["adviceShown"] == 3


@needs_chromium
@pytest.mark.audit
def test_long_hostile_names_do_not_widen_the_page(tmp_path):
    report, insights = with_long_names(*mixed_day())
    report["narrative"] = narrative()
    assert_fits(measure(tmp_path, render_html(report, insights)))
    evil, evil_ins = with_long_names(evil_report(), evil_insights())
    evil_ins = json.loads(json.dumps(evil_ins).replace(EVIL, LONG))
    evil = json.loads(json.dumps(evil).replace(EVIL, LONG))
    assert_fits(measure(tmp_path, render_html(evil, evil_ins)))


@needs_chromium
@pytest.mark.audit
def test_headless_screenshot(tmp_path):
    report, insights = mixed_day()
    report["narrative"] = narrative()
    page = tmp_path / "report.html"
    page.write_text(render_html(report, insights), encoding="utf-8")
    png = tmp_path / "shot.png"
    headless(tmp_path, f"--screenshot={png}", "--window-size=1280,2400", page.as_uri())
    data = Path(png).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank page compresses to a few KB
