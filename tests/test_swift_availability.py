"""Every Swift user of Core AI is marked for macOS / iOS 27, where Core AI exists.

VoxportKit targets macOS 15 / iOS 18 (its worker and replay runners run there), while Core AI is
27 and later. Only an Apple build checks `@available`: Linux, where the package is built and
tested (Core AI coming from its mirror), ignores it, so a missing mark would first fail on a Mac.
This reads the sources instead: in every file that imports CoreAI, each top-level declaration
carries `@available(macOS 27.0, iOS 27.0, *)`; every other file that names CoreAIRunner checks
`#available` first. The mirror itself (ios/Sources/CoreAI, Linux only) and files compiled on
Linux only are exempt.
"""

from __future__ import annotations

import re
from pathlib import Path

IOS = Path(__file__).resolve().parents[1] / "ios"
MARK = "@available(macOS 27.0, iOS 27.0, *)"
DECLARATION = re.compile(
    r"^(?:(?:public|package|internal|private|fileprivate|final|open|nonisolated)\s+)*"
    r"(class|struct|enum|actor|extension|protocol|func)\s"
)
LINUX_ONLY = re.compile(r"#if canImport\(CoreAI\) && os\(Linux\)")


def swift_files() -> list[Path]:
    mirror = IOS / "Sources" / "CoreAI"
    files = [*(IOS / "Sources").rglob("*.swift"), *(IOS / "Tests").rglob("*.swift")]
    return sorted(f for f in files if mirror not in f.parents)


def unmarked(text: str) -> list[str]:
    """The top-level declarations of a CoreAI-importing file that lack the mark."""
    missing = []
    depth = 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if depth == 0 and DECLARATION.match(stripped):
            j = i - 1
            attributes = []
            while j >= 0 and (
                lines[j].strip().startswith(("@", "///", "//")) or not lines[j].strip()
            ):
                attributes.append(lines[j].strip())
                j -= 1
            if MARK not in attributes:
                missing.append(stripped)
        code = stripped.split("//", 1)[0]
        depth += code.count("{") - code.count("}")
    return missing


def test_every_core_ai_user_is_marked_for_27():
    users = [f for f in swift_files() if re.search(r"^\s*import CoreAI\s*$", f.read_text(), re.M)]
    assert any(f.name == "CoreAIRunner.swift" for f in users), "the check reads nothing"
    problems = {}
    for f in users:
        text = f.read_text()
        if LINUX_ONLY.search(text):
            continue
        if missing := unmarked(text):
            problems[str(f.relative_to(IOS))] = missing
    assert not problems, f"Core AI users without {MARK}: {problems}"


def test_code_that_builds_a_core_ai_runner_elsewhere_checks_availability():
    for f in swift_files():
        text = f.read_text()
        if re.search(r"^\s*import CoreAI\s*$", text, re.M) or "CoreAIRunner(" not in text:
            continue
        assert "#available(macOS 27.0, iOS 27.0, *)" in text, (
            f"{f.relative_to(IOS)} makes a CoreAIRunner unchecked"
        )


def test_the_check_finds_a_missing_mark():
    marked = f"import CoreAI\n{MARK}\npublic actor A {{\n    func f() {{}}\n}}\n"
    assert unmarked(marked) == []
    assert unmarked(marked.replace(MARK + "\n", "")) == ["public actor A {"]
    nested = "import CoreAI\n#if canImport(CoreAI)\n    final class B {}\n#endif\n"
    assert unmarked(nested) == ["final class B {}"]
