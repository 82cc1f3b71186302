"""`voxport device-bench`: launch the app on a device with the bench's `VP_*` variables, wait
for its `result.json`, pull it (and `audio.wav`) back and summarise it (docs/on-device.md).

The app runs VoxportKit's bench from its launch environment and writes into
`Documents/<VP_OUT>/`. A `result.json` already there from an earlier run is pulled first, so the
wait ends only on a new one (one that parses and differs from it), never on a stale result.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from conversion.core.errors import UserError, VoxportError
from conversion.core.json_file import JsonFileError, load_json_file
from conversion.core.paths import ensure_writable_folder
from conversion.device.xcrun import Devicectl, find_xcrun, shown

# The bench's variables (ios/, voxport-bench); anything else starting VP_ is a typo.
VARIABLES = (
    "VP_BENCH",
    "VP_BUNDLE",
    "VP_RUNNER",
    "VP_UNITS",
    "VP_PASSES",
    "VP_SEED",
    "VP_PHONEMES",
    "VP_TOKENS",
    "VP_TEXT",
    "VP_MAX_FRAMES",
    "VP_MAX_TOKENS",
    "VP_VOICE",
    "VP_OUT",
    "VP_REPLAY",
)
RUNNERS = ("coreai", "worker", "replay")
UNITS = ("cpu-only", "cpu", "gpu", "ane")
RESULT, AUDIO = "result.json", "audio.wav"
# What a text bench (`chatterbox.text`, `audio8.text`, `kokoro.text`) writes beside its result:
# the JSON `voxport tokenize MODEL TEXT` (Kokoro: `voxport phonemize kokoro TEXT --fallback
# rules`, the bundle's letter rules reading words in no lexicon) prints, made on the device.
TEXT = "text.json"


class BenchTimeout(VoxportError):
    """No new result.json appeared in time: exit 1 (the device ran, or did not, on its own)."""


def parse_env(pairs: list[str]) -> dict[str, str]:
    """`K=V` pairs as a dict; a UserError naming a malformed one."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--env {pair!r}: expected KEY=VALUE (e.g. VP_BENCH=kokoro.speak)")
        env[key.strip()] = value
    return env


def _check_int(env: dict[str, str], key: str, minimum: int) -> None:
    if key not in env:
        return
    try:
        ok = int(env[key]) >= minimum
    except ValueError:
        ok = False
    if not ok:
        raise UserError(f"{key}={env[key]!r}: expected an integer >= {minimum}")


def check_env(env: dict[str, str], model: str, benches: tuple[str, ...]) -> dict[str, str]:
    """The launch environment, checked: VP_BENCH one of `benches` (the model's), known VP_*
    names, VP_RUNNER, VP_PASSES and VP_SEED well formed, VP_OUT relative (default
    bench/<VP_BENCH>)."""
    if not benches:
        raise UserError(f"model '{model}' has no device bench")
    valid = ", ".join(benches)
    bench = env.get("VP_BENCH")
    if bench is None:
        raise UserError(f"VP_BENCH is not set: pass --env VP_BENCH=… (one of: {valid})")
    if bench not in benches:
        raise UserError(f"unknown VP_BENCH '{bench}' for {model}: choose one of {valid}")
    unknown = sorted(k for k in env if k.startswith("VP_") and k not in VARIABLES)
    if unknown:
        raise UserError(f"unknown variable {unknown[0]}: the bench reads {', '.join(VARIABLES)}")
    if not env.get("VP_BUNDLE"):
        raise UserError(
            "VP_BUNDLE is not set: give the bundle's folder in the app's Documents "
            "(models/<bundle folder> after `voxport sideload`)"
        )
    for key, choices in (("VP_RUNNER", RUNNERS), ("VP_UNITS", UNITS)):
        if key in env and env[key] not in choices:
            raise UserError(f"{key}={env[key]!r}: choose one of {', '.join(choices)}")
    _check_int(env, "VP_PASSES", 1)
    _check_int(env, "VP_SEED", 0)
    out = dict(env)
    out.setdefault("VP_OUT", f"bench/{bench}")
    rel = PurePosixPath(out["VP_OUT"])
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UserError(f"VP_OUT={out['VP_OUT']!r}: give a folder inside the app's Documents")
    return out


@dataclass(frozen=True)
class Remote:
    """Where the app writes, inside its container."""

    folder: str

    @property
    def result(self) -> str:
        return f"{self.folder}/{RESULT}"

    @property
    def audio(self) -> str:
        return f"{self.folder}/{AUDIO}"

    @property
    def text(self) -> str:
        return f"{self.folder}/{TEXT}"


def remote_for(env: dict[str, str]) -> Remote:
    return Remote(f"Documents/{PurePosixPath(env['VP_OUT']).as_posix()}")


def _read_json(path: Path) -> dict | None:
    try:
        doc = load_json_file(path)
    except (OSError, JsonFileError):
        return None  # not there yet, or still being written
    return doc if isinstance(doc, dict) else None


def _pull(ctl: Devicectl, source: str, dest: Path) -> Path | None:
    """Pull one file; the local copy, or None when there is none."""
    got = ctl.run(ctl.copy_from(source, dest))
    if got.returncode != 0:
        return None
    if dest.is_dir() and (dest / PurePosixPath(source).name).is_file():
        return dest / PurePosixPath(source).name
    return dest if dest.is_file() else None


@dataclass
class Waiter:
    """Polls for a new result.json: one that parses and differs from the one before launch."""

    ctl: Devicectl
    remote: Remote
    work: Path
    wait_s: float
    poll_s: float
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def before(self) -> bytes | None:
        found = _pull(self.ctl, self.remote.result, self.work / "before-result.json")
        return found.read_bytes() if found else None

    def wait(self, before: bytes | None) -> Path:
        deadline = self.clock() + self.wait_s
        attempt = 0
        while True:
            attempt += 1
            found = _pull(self.ctl, self.remote.result, self.work / f"poll{attempt}-{RESULT}")
            if found and found.read_bytes() != before and _read_json(found) is not None:
                return found
            if self.clock() >= deadline:
                raise BenchTimeout(
                    f"no new {self.remote.result} on the device after {self.wait_s:.0f} s "
                    f"({attempt} polls): check the app's log (Console.app), or wait longer "
                    "with --wait"
                )
            self.sleep(self.poll_s)


def _num(value, unit: str = "", digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "—" if value is None else str(value)
    return f"{value:.{digits}f}{unit}"


def _device(result: dict) -> str:
    """voxport-bench writes `device` as {machine, os, ...}; a plain string is taken as is."""
    device = result.get("device")
    if isinstance(device, dict):
        return f"{device.get('machine', '?')}, {device.get('os', '?')}"
    return f"{device or '?'}, {result.get('os', '?')}"


def summarize(result: dict) -> list[str]:
    """A short readable summary of a bench's result.json (docs/on-device.md has the keys)."""
    lines = [
        f"bench {result.get('bench', '?')} on {_device(result)} (runner "
        f"{result.get('runner', '?')}, units {result.get('units', '?')}, "
        f"1 cold + {result.get('passes', '?')} warm passes)",
        f"load {_num(result.get('load_ms'), ' ms')}, first call "
        f"{_num(result.get('first_call_ms'), ' ms')}, warm pass "
        f"{_num(result.get('warm_pass_ms'), ' ms')}, "
        f"peak RSS {_num(result.get('peak_rss_mb'), ' MB')}",
    ]
    warm = result.get("warm_median_ms")
    if isinstance(warm, dict) and warm:
        width = max(len(str(k)) for k in warm)
        lines.append("warm median per graph:")
        lines += [f"  {str(g):<{width}}  {_num(ms, ' ms', 2)}" for g, ms in sorted(warm.items())]
    if "front_end_ms" in result:  # a text bench: no graphs, no audio
        lines.append(
            f"text: {_num(result.get('chunks'), '', 0)} chunk(s), "
            f"{_num(result.get('ids'), '', 0)} ids, front end "
            f"{_num(result.get('front_end_ms'), ' ms', 2)} per text"
        )
        return lines
    lines.append(
        f"audio {_num(result.get('audio_seconds'), ' s', 2)}, runtime calls per audio second "
        f"{_num(result.get('calls_per_audio_second'))}, RTF {_num(result.get('rtf'), '', 3)}"
    )
    if "first_audio_ms" in result:
        lines.append(
            f"first audio after {_num(result.get('first_audio_ms'), ' ms')} "
            f"(cold {_num(result.get('cold_first_audio_ms'), ' ms')}), whole utterance "
            f"{_num(result.get('utterance_ms'), ' ms')}"
        )
    return lines


def dry_run_lines(ctl: Devicectl, env: dict[str, str], work: Path, wait_s: float, poll_s: float):
    remote = remote_for(env)
    return [
        f"# before launch: any {RESULT} already there (the wait ends on a different one)",
        shown(ctl.copy_from(remote.result, work / f"before-{RESULT}")),
        shown(ctl.launch(env)),
        f"# then every {poll_s:g} s, for up to {wait_s:g} s, until a new {RESULT} parses:",
        shown(ctl.copy_from(remote.result, work / RESULT)),
        shown(ctl.copy_from(remote.audio, work / AUDIO)),
        shown(ctl.copy_from(remote.text, work / TEXT)) + f"  # text benches: {TEXT}",
    ]


def _keep(found: Path, out_dir: Path, name: str) -> Path:
    """Move a pulled file into `out_dir` in one rename (it was pulled beside it)."""
    target = out_dir / name
    os.replace(found, target)
    return target


def device_bench(
    model: str,
    benches: tuple[str, ...],
    device: str,
    app_id: str,
    pairs: list[str],
    out_dir: Path,
    dry_run: bool = False,
    wait_s: float = 900.0,
    poll_s: float = 5.0,
    echo: Callable[[str], None] = print,
) -> int:
    """The whole verb: 0 with the result pulled and summarised; 1 when the app reports the
    bench failed; UserError before any launch; BenchTimeout when no new result appears."""
    env = check_env(parse_env(pairs), model, benches)
    ctl = Devicectl(device, app_id)
    if dry_run:
        work = Path(tempfile.gettempdir()) / "voxport-device-bench"
        for line in dry_run_lines(ctl, env, work, wait_s, poll_s):
            echo(line)
        return 0
    find_xcrun()
    out_dir = ensure_writable_folder(Path(out_dir))
    remote = remote_for(env)
    work = Path(tempfile.mkdtemp(prefix=".pull-", dir=out_dir))
    try:
        waiter = Waiter(ctl, remote, work, wait_s, poll_s)
        before = waiter.before()
        launched = ctl.run(ctl.launch(env))
        if launched.returncode != 0:
            raise BenchTimeout(f"launching {app_id} on {device} failed: {launched.last_line}")
        found = waiter.wait(before)
        result = _read_json(found) or {}
        kept = [_keep(found, out_dir, RESULT)]
        pulled: dict[str, Path | None] = {}
        for name, source in ((AUDIO, remote.audio), (TEXT, remote.text)):
            pulled[name] = _pull(ctl, source, work / name)
            if pulled[name] is not None:
                kept.append(_keep(pulled[name], out_dir, name))
            else:  # never leave an earlier run's file beside this run's result
                (out_dir / name).unlink(missing_ok=True)
        audio = pulled[AUDIO]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if "error" in result:
        # The app writes its failure where the result would be (ios/App/README.md).
        echo(f"the bench failed on the device: {result['error']}")
        echo(f"pulled {kept[0]}")
        return 1
    for line in summarize(result):
        echo(line)
    echo(f"pulled {', '.join(str(p) for p in kept)}" + ("" if audio else f" (no {AUDIO})"))
    return 0
