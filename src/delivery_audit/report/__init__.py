"""What the audit hands to people and machines: report.json, report.html, alerts."""
