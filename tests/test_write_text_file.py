"""Markdown reports (`gate --markdown`, kill tables, sweeps) are written beside their target
and renamed on (`paths.write_text_file`): a write that fails leaves the previous file whole."""

from __future__ import annotations

import pytest

from conversion.core.paths import write_text_file


def test_a_failed_write_leaves_the_previous_report(tmp_path):
    target = tmp_path / "gate.md"
    target.write_text("| previous | table |\n")
    with pytest.raises(UnicodeEncodeError):
        write_text_file(target, "| half |\n" + "\udcff")  # fails while encoding, mid-write
    assert target.read_text() == "| previous | table |\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gate.md"]  # no partial left
    write_text_file(target, "| new |\n")
    assert target.read_text() == "| new |\n"
