"""The manifest (delivery_audit.core.manifest): the publisher writes it from the model, and
the one verifier (Airflow's check_report) accepts exactly that form and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delivery_audit.core.manifest import MANIFEST, Manifest, ManifestError, verify_manifest
from delivery_audit.storage import publish, read_manifest

WID = "20261119T000000Z_20261120T000000Z"
REL = f"dt=2026-11-19/{WID}"


@pytest.fixture
def folder(tmp_path) -> Path:
    """A report folder as the publisher leaves it."""
    staging = tmp_path / "staging"
    for name, data in {"report.json": json.dumps({"window": {"id": WID}}),
                       "report.html": "<html/>", "anomalies/part-0000.parquet": "PAR1",
                       "validation/results.json": "{}"}.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_text(data)
    publish(staging, str(tmp_path / "reports"), REL)
    return tmp_path / "reports" / REL


def check(folder: Path, window_id: str = WID, text: str | None = None) -> Manifest:
    """verify_manifest with the folder's I/O passed in, as check_report passes S3's."""
    present = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return verify_manifest((folder / MANIFEST).read_text() if text is None else text,
                           window_id=window_id, present=present,
                           read=lambda name: (folder / name).read_bytes(), where=str(folder))


def test_the_publishers_manifest_verifies_and_round_trips(folder):
    manifest = check(folder)
    assert manifest.window_id == WID and manifest.file_count == 4
    text = (folder / MANIFEST).read_text()
    assert manifest.to_json() == text, "the model writes exactly what it parses"
    assert read_manifest(str(folder.parents[1]), REL) == json.loads(text)


def test_a_tampered_report_html_fails(folder):
    (folder / "report.html").write_text("<html>changed</html>")
    with pytest.raises(ValueError, match=r"report\.html does not match the manifest .*"
                                         r"changed after publication"):
        check(folder)


def test_a_missing_file_fails(folder):
    (folder / "anomalies" / "part-0000.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"lists files that are missing: "
                                                r"\['anomalies/part-0000.parquet'\]"):
        check(folder)


def test_a_wrong_window_fails(folder):
    with pytest.raises(ValueError, match=f"is for window {WID}, expected 20261118T"):
        check(folder, window_id="20261118T000000Z_20261119T000000Z")


def test_a_report_file_the_manifest_does_not_list_fails(folder):
    data = json.loads((folder / MANIFEST).read_text())
    files = [f for f in data["files"] if f["path"] != "report.html"]
    text = json.dumps({**data, "files": files, "file_count": len(files),
                       "total_bytes": sum(f["size"] for f in files)})
    with pytest.raises(FileNotFoundError, match=r"does not list report\.html"):
        check(folder, text=text)


def _edited(folder: Path, **changes) -> str:
    data = json.loads((folder / MANIFEST).read_text())
    return json.dumps({k: v for k, v in {**data, **changes}.items() if v is not ...})


def test_a_newer_1x_manifest_with_a_field_this_reader_does_not_know_verifies(folder):
    text = _edited(folder, schema_version="1.1", signed_by="a later publisher")
    assert check(folder, text=text).window_id == Manifest.parse(text).window_id


@pytest.mark.parametrize("form", [
    "not json", "[]", "list of names", "name instead of path", "absolute path",
    "no sha256", "short sha256", "no window_id", "wrong file_count",
    "wrong total_bytes", "other schema", "duplicate path", "the manifest itself",
])
def test_anything_but_the_publishers_form_is_not_a_manifest(folder, form):
    data = json.loads((folder / MANIFEST).read_text())
    first = data["files"][0]
    text = {
        "not json": lambda: "<html/>",
        "[]": lambda: "[]",
        "list of names": lambda: _edited(folder, files=[f["path"] for f in data["files"]]),
        "name instead of path": lambda: _edited(folder, files=[
            {"name": f["path"], "size": f["size"], "sha256": f["sha256"]}
            for f in data["files"]]),
        "absolute path": lambda: _edited(folder, files=[
            {**f, "path": f"{folder}/{f['path']}"} for f in data["files"]]),
        "no sha256": lambda: _edited(folder, files=[
            {"path": f["path"], "size": f["size"]} for f in data["files"]]),
        "short sha256": lambda: _edited(folder, files=[{**first, "sha256": "abc"},
                                                       *data["files"][1:]]),
        "no window_id": lambda: _edited(folder, window_id=...),
        "wrong file_count": lambda: _edited(folder, file_count=99),
        "wrong total_bytes": lambda: _edited(folder, total_bytes=0),
        "other schema": lambda: _edited(folder, schema_version="2.0"),
        "duplicate path": lambda: _edited(folder, files=[first, *data["files"]],
                                          file_count=5,
                                          total_bytes=data["total_bytes"] + first["size"]),
        "the manifest itself": lambda: _edited(folder, files=[{**first, "path": MANIFEST},
                                                              *data["files"][1:]]),
    }[form]()
    with pytest.raises(ManifestError, match=f"{MANIFEST}: not a manifest"):
        check(folder, text=text)
    with pytest.raises(ManifestError, match="not a manifest"):
        Manifest.parse(text)
