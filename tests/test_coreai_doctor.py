"""`coreai doctor` (coreai-cli 0.1.0, a community pre-flight lint) over every source file under
`conversion/` and over exported bundles' assets. No FATAL or SILENT finding may stay unless
tests/coreai_doctor_waivers.toml waives it (only for code that never enters a graph), and every
waiver must still match: a stale one fails.

Doctor runs in-process (its `coreai_doctor` module, the same calls its `main()` makes, once per
file) rather than as ~130 subprocesses; one test holds that against the CLI's `--json`.

What doctor reads of a voxport bundle here: not the bundle folder (a voxport bundle has
`manifest.json`, not a LanguageBundle `metadata.json`, so doctor refuses it with "cannot tell
what ... is"); each `.aimodel` asset on its own, of which, without `xcrun coreai-build` (Linux),
it reads only the asset's own `metadata.json` (the producer stamp, rule IR-040-DEBUG-LOC) and
whether the path is a symlink (ASSET-SYMLINK); its graph-level rules are skipped.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import coreai_doctor as cd
import pytest

from conversion.core.json_file import JsonFileError, load_json_object
from conversion.selftest.export import build_bundle

ROOT = Path(__file__).resolve().parents[1]
WAIVERS = Path(__file__).with_name("coreai_doctor_waivers.toml")
BLOCKING = ("fatal", "silent")  # doctor's exit-2 class
# The self-test graphs linted as a bundle (the cheapest export, ~5 s): a plain fp32 graph and the
# core sampler (a graph of conversion/core/host/sampling.py). Models' reduced bundles are the ones
# their CLI tests exported earlier in the session (see `bundles`).
SELFTEST_GRAPHS = ["conv", "sampler"]


def doctor(path: Path) -> cd.Report:
    """`coreai doctor PATH` in-process: what its main() does for a source file or an asset."""
    path = path.resolve()
    rep = cd.Report(target=str(path), kind=cd.classify(path))
    cd.check_env(rep, None)
    if rep.kind == "asset":
        cd.check_asset(path, rep, profile="iphone")  # the CLI's default --profile
    elif rep.kind == "source":
        cd.check_source_files([path] if path.is_file() else sorted(path.glob("*.py")), rep)
    else:
        raise AssertionError(f"{path}: doctor reads it as {rep.kind!r}, not a source or asset")
    return rep


@dataclass(frozen=True)
class Hit:
    file: str  # repository-relative
    rule: str
    severity: str
    lineno: int | None
    text: str  # the flagged line, stripped (the evidence when the finding names no line)

    def __str__(self) -> str:
        at = f"{self.file}:{self.lineno}" if self.lineno else self.file
        return f"{self.severity.upper()} {self.rule} {at}: {self.text}"


def _hit(finding: cd.Finding) -> Hit:
    where, lineno = finding.where, None
    if m := re.fullmatch(r"(.*):(\d+)", where):
        where, lineno = m.group(1), int(m.group(2))
    path = Path(where)
    text = finding.evidence
    if lineno is not None:
        text = path.read_text(errors="ignore").splitlines()[lineno - 1].strip()
    rel = path.resolve().relative_to(ROOT).as_posix()
    return Hit(rel, finding.rule.id, finding.rule.severity, lineno, text)


def source_files() -> list[Path]:
    return sorted((ROOT / "conversion").rglob("*.py"))


@functools.cache
def source_hits() -> tuple[Hit, ...]:
    hits: list[Hit] = []
    for f in source_files():
        hits += [_hit(finding) for finding in doctor(f).findings]
    return tuple(hits)


@dataclass(frozen=True)
class Waiver:
    file: str
    rule: str
    line: str
    reason: str
    count: int = 1

    def matches(self, hit: Hit) -> bool:
        return (hit.file, hit.rule, hit.text) == (self.file, self.rule, self.line.strip())


@functools.cache
def waivers() -> tuple[Waiver, ...]:
    return tuple(Waiver(**w) for w in tomllib.loads(WAIVERS.read_text())["waiver"])


# -- source ---------------------------------------------------------------------------------------


def test_waivers_are_well_formed():
    seen = set()
    for w in waivers():
        assert (ROOT / w.file).is_file(), f"waiver for a missing file: {w.file}"
        assert w.rule in cd.RULES and cd.RULES[w.rule].scope == "source", w.rule
        assert len(w.reason.split()) >= 5, f"{w.file} {w.rule}: say why it never enters a graph"
        assert w.count >= 1, w
        key = (w.file, w.rule, w.line.strip())
        assert key not in seen, f"duplicate waiver {key}"
        seen.add(key)


def test_no_unwaived_fatal_or_silent_finding_in_conversion():
    assert len(source_files()) > 50
    blocking = [h for h in source_hits() if h.severity in BLOCKING]
    left = [h for h in blocking if not any(w.matches(h) for w in waivers())]
    assert not left, (
        "coreai doctor: rewrite these (code that enters a graph), or, only for code that never "
        f"does, waive them with a reason in {WAIVERS.relative_to(ROOT)}:\n"
        + "\n".join(map(str, left))
    )


def test_every_waiver_still_matches_its_findings():
    problems = []
    for w in waivers():
        n = sum(w.matches(h) for h in source_hits())
        if n != w.count:
            problems.append(
                f"{w.file} {w.rule} {w.line.strip()!r}: waives {w.count} line(s), matches {n}"
                + (" (stale: remove it)" if n == 0 else "")
            )
    assert not problems, "\n".join(problems)


def test_in_process_lint_is_what_the_cli_reports():
    """One file with findings through `coreai doctor --json`: the same rules, the same findings."""
    f = ROOT / "conversion/s3gen/flow/host.py"
    cli = Path(sys.executable).with_name("coreai")
    proc = subprocess.run(
        [str(cli), "doctor", "--json", str(f)], capture_output=True, text=True, check=False
    )
    assert proc.returncode in (0, 2), proc.stderr  # 2: a fatal/silent finding (waived above)
    got = json.loads(proc.stdout)
    rep = doctor(f)
    assert got["kind"] == rep.kind == "source"
    assert got["rules_run"] == rep.checked
    assert sorted((x["id"], x["where"], x["evidence"]) for x in got["findings"]) == sorted(
        (x.rule.id, x.where, x.evidence) for x in rep.findings
    )
    assert rep.findings, "the file keeps waived findings: the comparison must not be vacuous"


def test_the_lint_flags_what_the_rewrites_removed(tmp_path):
    """The patterns rewritten in conversion/ are still caught, so a clean run means something."""
    f = tmp_path / "graphs.py"
    f.write_text(
        "y = x.squeeze(-1)\n"
        "z = F.normalize(y)\n"
        "m = (a >= lo) & (a <= hi)\n"
        "w = torch.gather(idx, 1, pos)[:, 0]\n"
        "# v = x.squeeze(1)  (comments are skipped)\n"
    )
    found = sorted((x.rule.id, x.where.rsplit(":", 1)[1]) for x in doctor(f).findings)
    assert found == [
        ("SRC-F-NORMALIZE", "2"),
        ("SRC-INT64-BOOL-MASK", "3"),
        ("SRC-SQUEEZE-DIM", "1"),
    ]


# -- bundles --------------------------------------------------------------------------------------


def _voxport_bundles(base: Path, depth: int) -> list[Path]:
    found = []
    for d in range(depth + 1):
        for manifest in base.glob("/".join(["*"] * d + ["manifest.json"])):
            try:
                # Other tests leave manifests that are lists, strings or 1,200-deep nests here
                # on purpose: such a file is no bundle (json_file names every way, as one error).
                fmt = load_json_object(manifest).get("format", "")
            except (OSError, JsonFileError):
                continue
            if str(fmt).startswith("voxport-bundle") and _intact(manifest.parent):
                found.append(manifest.parent)
    return found


def _intact(bundle: Path) -> bool:
    """An exported bundle as its export left it: other tests tamper with, truncate, strip or
    hand-make theirs on purpose (and with two pytest workers they sit beside this one's)."""
    from conversion.core.bundle import load_manifest
    from conversion.core.errors import UserError

    try:
        load_manifest(bundle, verify=True)
    except UserError:
        return False
    # The sideload tests' bundles hold hand-made stand-in assets (no converter ran, so no
    # metadata.json): they are not exports.
    return all((a / "metadata.json").is_file() for a in bundle.glob("*.aimodel"))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """The self-test bundle (exported here, a few graphs), plus every voxport bundle already
    exported in this pytest session (the model CLI tests' reduced bundles, when they ran first:
    reused, not re-exported) and any under the repository's bundles/ (local exports)."""
    selftest = build_bundle(
        tmp_path_factory.mktemp("doctor") / "core", seed=0, only=SELFTEST_GRAPHS
    )
    found = [selftest]
    base = tmp_path_factory.getbasetemp()
    if base.name.startswith("popen-gw"):  # pytest-xdist: every worker's folder sits beside it
        base = base.parent
        found += _voxport_bundles(base, depth=4)
    else:
        found += _voxport_bundles(base, depth=3)
    found += _voxport_bundles(ROOT / "bundles", depth=1)
    return sorted({b.resolve() for b in found})


def test_doctor_cannot_read_a_voxport_bundle_folder(bundles):
    """The folder is refused outright; the assets are linted one by one below."""
    with pytest.raises(SystemExit, match="cannot tell what"):
        cd.classify(bundles[0])


def test_bundle_assets_have_no_fatal_or_silent_finding(bundles):
    problems, linted = [], []
    for bundle in bundles:
        assets = sorted(bundle.glob("*.aimodel"))
        for asset in assets:
            rep = doctor(asset)
            linted.append(f"{bundle.name}/{asset.name}")
            assert rep.kind == "asset"
            # What doctor reads of an asset without the Xcode toolchain: its metadata.json
            # producer stamp and whether the path is a symlink.
            assert {cd.IR_040.id, cd.SYMLINKED_ASSET.id} <= set(rep.checked), rep.checked
            assert any(n.startswith("asset producer: coreai-core ") for n in rep.notes), rep.notes
            if any("coreai-build inspect unavailable" in n for n in rep.notes):
                graph_rules = {r.id for r in cd.RULES.values() if r.scope == "graph"}
                assert not graph_rules & set(rep.checked)  # skipped: no graph was read
            problems += [
                f"{asset}: {f.rule.severity.upper()} {f.rule.id}: {f.evidence}"
                for f in rep.findings
                if f.rule.severity in BLOCKING
            ]
    print(f"coreai doctor linted {len(linted)} assets: {', '.join(linted)}")
    assert len(linted) >= len(SELFTEST_GRAPHS)
    assert not problems, "\n".join(problems)
