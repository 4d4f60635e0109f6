"""The HTML report: self-contained, inline SVG, every data value escaped."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_fixtures import EVIL, evil_insights, evil_report, make_report

from delivery_audit.report.html import render_html


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


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not os.path.exists(CHROMIUM) and not shutil.which("chromium"),
                    reason="chromium is not installed: no headless screenshot")
def test_headless_screenshot(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(evil_report(), evil_insights()), encoding="utf-8")
    png = tmp_path / "shot.png"
    exe = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
                    "--window-size=1280,2400", page.as_uri()],
                   check=True, timeout=120, capture_output=True)
    data = Path(png).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank page compresses to a few KB
