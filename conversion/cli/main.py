"""`voxport`: doctor, export, gate, speak, bench, serve, phonemize, tokenize, voice, and the
device verbs sideload, device-bench, fixtures (`conversion/cli/device.py`).

Every user mistake (unknown model, missing weights folder, unwritable output, bad input) is a
one-line `voxport: error: ...` and exit code 2; a failed gate is exit code 1. The flags every
model shares are defined here; a model adds its own through its CLI module's
`add_arguments(verb, parser)`, so `voxport speak kokoro --help` lists Kokoro's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from conversion.core.errors import UserError
from conversion.core.hub import is_hub_id, local_owner
from conversion.core.paths import (
    check_name_lengths,
    forget_made_folders,
    no_space_message,
    remove_made_folders,
    shown,
    writable_file,
)
from conversion.core.port import DTYPES
from conversion.core.runtime import serve

from . import device, outputs, registry, sweep, values

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MODEL_VERBS = registry.ALL_VERBS


WEIGHTS_HELP = (
    "a local checkpoint folder in the publisher's layout; a hub id OWNER/NAME (fetched into "
    "the hub cache) when no file or folder OWNER is here, else OWNER/NAME is a local path "
    "(./OWNER/NAME always is); or 'random'"
)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its refusals one line like every other user mistake (a model verb's
    usage runs to a dozen lines above the one that matters; `--help` still shows it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"voxport: error: {message} (see `{self.prog} --help`)\n")


def _weights(value: str, model: str | None) -> str | Path:
    """`--weights`: 'random', a folder, or a hub id (fetched, or found in the hub cache, now —
    before any other work); which of the last two `hub.is_hub_id` says (WEIGHTS_HELP)."""
    if value == "random":
        return value
    if is_hub_id(value) and model is not None and registry.resolve(model).has_port:
        return registry.port(model).local_weights(value)
    path = Path(value).expanduser()
    check_name_lengths(path, f"--weights {shown(value)}")
    if path.is_dir():
        _check_readable(path, model)
        return path
    if path.exists():
        raise UserError(f"--weights {path} is a file: pass the folder that holds the checkpoint")
    owner = local_owner(value)
    if owner is not None:  # spelled like a hub id, but under a local folder: a path's typo
        raise UserError(
            f"weights folder {path} does not exist (./{owner} exists here, so {value} "
            "names a local path, not a hub id): check the path, or run from another folder "
            "to fetch the hub id"
        )
    raise UserError(
        f"weights folder {path} does not exist (pass a folder, a hub id such as "
        "hexgrad/Kokoro-82M, or random)"
    )


def _check_readable(folder: Path, model: str | None) -> None:
    """The checkpoint files a port reads from `folder` (its `hub_files`) are regular files
    this user can open: a folder where a file belongs, or a file without read permission,
    would otherwise be a traceback from the hashing or the loader."""
    if model is None or not registry.resolve(model).has_port:
        return
    for pattern in registry.port(model).hub_files:
        for path in sorted(folder.glob(pattern)):
            if path.is_dir():
                raise UserError(
                    f"weights file {path} is a folder: the {model} loader reads a file there; "
                    "replace it with the checkpoint file"
                )
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                raise UserError(
                    f"weights file {path} cannot be read ({e.strerror or e}): give this user "
                    "read access to it (chmod u+r), or pass another --weights folder"
                ) from None


def _check_text(args: argparse.Namespace) -> None:
    """TEXT and --ref-text: something to say, and UTF-8 (before any tokenizer sees them)."""
    for attr, name in (("text", "TEXT"), ("ref_text", "--ref-text")):
        text = getattr(args, attr, None)
        if not isinstance(text, str):
            continue
        problem = values.utf8_problem(text)
        if problem is not None:
            raise UserError(
                f"{name} is not valid UTF-8 ({problem}): pass UTF-8 text (a UTF-8 terminal, "
                "e.g. LANG=C.UTF-8, or `iconv -t UTF-8` for text from a file)"
            )
    if args.verb in ("speak", "phonemize", "tokenize") and not args.text.strip():
        raise UserError("TEXT is empty: give something to say")


def _add_common(p: argparse.ArgumentParser, json_out: bool = True) -> None:
    p.add_argument("model", help=f"one of: {', '.join(registry.names())}")
    p.add_argument("--weights", default=None, metavar="DIR|OWNER/NAME|random", help=WEIGHTS_HELP)
    p.add_argument(
        "--config",
        choices=("published", "reduced"),
        default="published",
        help="model size: the published configuration or a reduced test one",
    )
    p.add_argument(
        "--seed",
        type=values.seed,
        default=0,
        metavar="N",
        help=f"seed for the draws, 0 to {values.SEED_MAX} (default 0)",
    )
    # Apart from --seed, so a sweep over draw seeds reuses one export of random weights.
    p.add_argument(
        "--weights-seed",
        type=values.seed,
        default=0,
        metavar="N",
        help=f"seed of --weights random, 0 to {values.SEED_MAX} (default 0)",
    )
    p.add_argument("--dtype", choices=DTYPES, default="fp32", help="the bundle's precision")
    if json_out:
        p.add_argument(
            "--json",
            dest="json_path",
            default=None,
            metavar="PATH",
            help="also write the result as JSON",
        )


def _add_bundle(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bundle",
        default=None,
        metavar="DIR",
        help="bundle folder to use (exported there first when missing; one made from other "
        "weights, sizes or precisions is refused unless --overwrite)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="re-export a --bundle made from other arguments (bundles/ folders always are)",
    )


def _model_in(argv: list[str]) -> str | None:
    """The registered model a model verb's command line names (its first such word), if any."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in MODEL_VERBS:
        return None
    for word in words[1:]:
        try:
            return registry.resolve(word).name
        except UserError:
            continue
    return None


def _add_host_verbs(sub, verbs: dict[str, argparse.ArgumentParser]) -> None:
    """The verbs that make a device host's inputs: phonemes, token ids, voice files."""
    p = verbs["phonemize"] = sub.add_parser(
        "phonemize", help="TEXT as the chunks a host speaks: phonemes and ids, JSON on stdout"
    )
    p.add_argument("model", help=f"one of: {', '.join(registry.names())}")
    p.add_argument("text")

    p = verbs["tokenize"] = sub.add_parser(
        "tokenize", help="TEXT as the chunks a host speaks: token ids, JSON on stdout"
    )
    _add_common(p, json_out=False)
    p.add_argument("text")

    p = verbs["voice"] = sub.add_parser(
        "voice", help="clone a voice from a reference wav into a voice file a host loads"
    )
    _add_common(p, json_out=False)
    p.add_argument("--ref", required=True, metavar="WAV", help="the reference recording")
    p.add_argument("-o", "--output", required=True, metavar="VOICE.npz")


def _add_target(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help=f"one of: {', '.join(registry.names())}")
    p.add_argument("--device", required=True, metavar="UDID", help="`xcrun devicectl list devices`")
    p.add_argument("--app-id", required=True, metavar="ID", help="the app's bundle identifier")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")


def _add_device_verbs(sub) -> None:
    """Register sideload, device-bench and fixtures on the top-level subparsers."""
    p = sub.add_parser(
        "sideload",
        help="push a bundle into an app's Documents/models file by file, each pulled back "
        "and its sha256 checked",
    )
    _add_target(p)
    p.add_argument("--bundle", required=True, metavar="DIR", help="the bundle folder to push")

    p = sub.add_parser(
        "device-bench",
        help="launch the app's bench with VP_* variables and pull result.json back",
    )
    _add_target(p)
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="a launch variable (repeat): VP_BENCH=… is required; see docs/on-device.md",
    )
    p.add_argument("--out", default=None, metavar="DIR", help="default out/device-bench/BENCH")
    p.add_argument("--wait", type=float, default=900.0, metavar="S", help="give up after S s")
    p.add_argument("--poll", type=float, default=5.0, metavar="S", help="poll every S s")

    p = sub.add_parser(
        "fixtures", help="write (or --check) the Swift parity fixtures from the Python code"
    )
    p.add_argument("kind", choices=("swift",), help="which fixtures (swift: ios/Tests/Fixtures)")
    p.add_argument("--out", default=None, metavar="DIR", help=f"default {device.DEFAULT_FIXTURES}")
    p.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temp folder and compare with DIR (exit 1 when they differ)",
    )


#: The most `--workers`: each is a process with the bundle loaded (hundreds of MB), and the
#: Linux runtime is single-threaded, so past the cores they only queue for them.
MAX_WORKERS = max(64, os.cpu_count() or 1)


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {MAX_WORKERS} (the cores: {os.cpu_count()}), "
            f"got '{text}'"
        )
    return n


def _add_workers(p: argparse.ArgumentParser) -> None:
    # Each worker is a runtime child with the bundle loaded once; the Linux runtime is
    # single-threaded, so one per core.
    p.add_argument(
        "--workers",
        type=_workers,
        default=os.cpu_count() or 1,
        metavar="N",
        help="runtime worker processes, each with the bundle loaded (default: the cores)",
    )


def _add_speak(sub, verbs: dict[str, argparse.ArgumentParser]) -> None:
    """`voxport speak`: TEXT to a wav, for every model with a port."""
    p = verbs["speak"] = sub.add_parser("speak", help="synthesise TEXT to a wav through a bundle")
    _add_common(p, json_out=False)
    p.add_argument("text")
    p.add_argument("-o", "--output", required=True, metavar="OUT.wav")
    p.add_argument(
        "--stream", action="store_true", help="write the audio as it comes (else whole at the end)"
    )
    p.add_argument(
        "--timings", default=None, metavar="OUT.json",
        help='also write each word\'s start and end in seconds, {"words": [...]} (kokoro)',
    )  # fmt: skip
    _add_workers(p)
    _add_bundle(p)


def build_parser(model: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `model`, each verb also takes that model's own flags."""
    parser = _Parser(
        prog="voxport",
        description="Port open TTS models from PyTorch to Apple's Core AI, with parity gates.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("doctor", help="versions, and a self-test export + run")
    p.add_argument("--json", dest="json_path", default=None, metavar="PATH")
    p.add_argument("--no-selftest", action="store_true", help="only print versions")

    p = sub.add_parser(
        "serve",
        help="serve a bundle's graphs, or single assets (--assets), over stdin/stdout "
        "(docs/worker-protocol.md)",
    )
    serve.add_arguments(p)

    verbs: dict[str, argparse.ArgumentParser] = {}
    p = verbs["export"] = sub.add_parser("export", help="export a model's graphs into a bundle")
    _add_common(p, json_out=False)
    p.add_argument(
        "--output-dir",
        default=None,
        help="bundle folder (default bundles/MODEL-DTYPE[-CONFIG], where speak and gate look)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing bundle")

    p = verbs["gate"] = sub.add_parser("gate", help="run a model's gate ladder against its oracle")
    _add_common(p)
    p.add_argument("--markdown", default=None, metavar="PATH", help="write the table as markdown")
    p.add_argument("--plot", default=None, metavar="PNG", help="waveforms + spectrogram diff")
    p.add_argument("--stop-on-fail", action="store_true")
    p.add_argument(
        "--seeds", type=values.seed_list, default=None, metavar="0,1,..",
        help="run the gate once per draw seed (one export) and print the worst of each rung",
    )  # fmt: skip
    p.add_argument(
        "--weights-seeds", type=values.seed_list, default=None, metavar="0,1,..",
        help="also once per --weights random seed (each its own export)",
    )  # fmt: skip
    p.add_argument(
        "--mutants", nargs="?", const="all", default=None, metavar="all|NAME,..",
        help="run the ladder once per deliberate fault in the port and print the kill table",
    )  # fmt: skip
    _add_bundle(p)

    _add_speak(sub, verbs)

    p = verbs["bench"] = sub.add_parser("bench", help="measure speed and memory (flat JSON)")
    _add_common(p)
    p.add_argument(
        "--repeats", type=values.count, default=None, metavar="N",
        help="timed calls per measurement (at least 1; default: the model's)",
    )  # fmt: skip
    p.add_argument(
        "--profile",
        action="store_true",
        help="also time every op of each graph the bench called (top ops, their shapes)",
    )
    _add_workers(p)
    _add_bundle(p)

    _add_host_verbs(sub, verbs)
    _add_device_verbs(sub)

    if model is not None:
        commands = registry.commands(model)
        for name, vp in verbs.items():
            commands.add_arguments(name, vp)
    return parser


def _validate(args: argparse.Namespace) -> None:
    """The checks every verb shares, cheapest first: a hub id is fetched last of all."""
    if getattr(args, "model", None) is not None:
        args.model = registry.resolve(args.model).name
    _check_text(args)
    outputs.check_names(args)  # empty paths, names past the file system's limits
    outputs.check(args, _input_files(args), _local_weights(args))  # outputs over inputs
    for attr in ("json_path", "markdown", "plot", "output", "timings"):
        if getattr(args, attr, None) is not None:
            setattr(args, attr, writable_file(getattr(args, attr)))
    if getattr(args, "weights", None) is not None:
        args.weights = _weights(args.weights, getattr(args, "model", None))
    if args.verb == "export" and args.output_dir is None:
        # A port's default folder names its weights (random weights: their seed), known once
        # they are resolved: `verbs.export` places it then.
        if not registry.resolve(args.model).has_port:
            args.output_dir = Path("bundles") / f"{args.model}-{args.dtype}"
    for attr in ("output_dir", "bundle"):
        if getattr(args, attr, None) is not None:
            setattr(args, attr, Path(getattr(args, attr)))


def _input_files(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files a model's own flags read (Kokoro's `--voice` pack), from its CLI module's
    optional `input_files(args)`."""
    model = getattr(args, "model", None)
    if model is None or args.verb not in MODEL_VERBS:
        return []
    reader = getattr(registry.commands(model), "input_files", None)
    return list(reader(args)) if reader is not None else []


def _local_weights(args: argparse.Namespace) -> Path | None:
    """`--weights` when it names a local folder (a hub id or `random` names none here)."""
    value = getattr(args, "weights", None)
    if not isinstance(value, str) or value == "random":
        return None
    path = Path(value).expanduser()
    return path if path.is_dir() else None


def _check_mutants(args: argparse.Namespace) -> None:
    """`--mutants` is one catalogue run: no seed sweep, no plot (one per fault would be needed)."""
    if sweep.wants_sweep(args):
        raise UserError("--mutants runs at one seed: leave out --seeds / --weights-seeds")
    if getattr(args, "plot", None):
        raise UserError("--mutants draws no plot: leave out --plot")
    if not registry.resolve(args.model).has_mutants:
        raise UserError(f"{args.model} has no fault catalogue: --mutants is for a model with one")


def _parse(argv: list[str]) -> argparse.Namespace:
    # Without a known model the parser has no model flags; _validate names an unknown model.
    return build_parser(_model_in(argv)).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The CLI: the verb's exit code; a run that fails removes the folders it made for its
    output files (those still empty). A runtime worker that died (`RuntimeCrash`: the runtime
    aborted it) is one line naming the graph, exit 2: its log is no traceback of ours."""
    from conversion.core.errors import RuntimeCrash
    from conversion.core.runtime import ending

    forget_made_folders()
    try:
        code = _main(argv)
    except RuntimeCrash as e:
        remove_made_folders()
        if ending.ending():
            raise  # a worker this process ended on its signal: the signal's line says it
        what = str(e).strip().splitlines()[0].removesuffix("; its last words:")
        print(f"voxport: error: {what}: its worker died, so the run stopped", file=sys.stderr)
        return EXIT_USAGE
    except BaseException:
        remove_made_folders()
        raise
    if code != 0:
        remove_made_folders()
    return code


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parse(argv)
        _validate(args)
        if args.verb == "doctor":
            return registry.doctor()(args)
        if args.verb == "serve":
            # The bundle is checked (hashes, graph names), and BUNDLE or --assets chosen, before
            # anything loads: a one-line error.
            return serve.run_args(args)
        if args.verb == "gate" and args.mutants is not None:
            _check_mutants(args)
        if args.verb == "gate" and sweep.wants_sweep(args):
            return sweep.run(args, argv)
        if args.verb in device.RUNNERS:
            return device.RUNNERS[args.verb](args)
        return int(registry.verb(args.model, args.verb)(args) or 0)
    except UserError as e:
        message = str(e).strip().splitlines()
        print(f"voxport: error: {message[0]}", file=sys.stderr)
        for line in message[1:]:
            print(f"  {line}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        # A full disk is the user's to fix, not a bug: one line (the writers have already
        # removed their temp files and staging folders).
        message = no_space_message(e)
        if message is None:
            raise
        print(f"voxport: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (`ending.Terminated`): 130 or 143
        from conversion.core.runtime import ending

        print(ending.message(e), file=sys.stderr)
        return ending.exit_code(e)


def console() -> NoReturn:
    """The `voxport` program: `main` in a process of its own temp folder, with SIGTERM handled
    as Ctrl-C is, ended without the runtime's native teardown however `main` ends (returned,
    interrupted, a traceback): `runtime.ending.run_program`. Every session and file is closed
    by the time `main` returns or unwinds, so nothing is lost; the bundle locks, lowered assets
    and the temp folder go with the process (`os._exit` skips the libraries' own cleanup)."""
    from conversion.core.runtime.ending import run_program

    run_program(main)


if __name__ == "__main__":
    console()
