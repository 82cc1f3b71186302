"""`voxport`: doctor, export, gate, speak, bench.

Every user mistake (unknown model, missing weights folder, unwritable output, bad input) is a
one-line `voxport: error: ...` and exit code 2; a failed gate is exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import registry
from .errors import UserError
from .paths import writable_file

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _weights(value: str) -> str | Path:
    if value == "random":
        return value
    path = Path(value).expanduser()
    if not path.is_dir():
        raise UserError(f"weights folder {path} does not exist (or pass --weights random)")
    return path


def _add_common(p: argparse.ArgumentParser, weights: bool = True, json_out: bool = True) -> None:
    p.add_argument("model", help=f"one of: {', '.join(registry.names())}")
    if weights:
        p.add_argument(
            "--weights",
            default=None,
            metavar="DIR|random",
            help="a local checkpoint folder in the publisher's layout, or 'random'",
        )
        p.add_argument(
            "--config",
            choices=("published", "reduced"),
            default="published",
            help="model size: the published configuration or a reduced test one",
        )
    p.add_argument("--seed", type=int, default=0, help="seed for random weights and draws")
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
        help="bundle folder to use (exported there first when missing or stale)",
    )
    p.add_argument("--dtype", choices=("fp32", "fp16", "int8"), default="fp32")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="voxport",
        description="Port open TTS models from PyTorch to Apple's Core AI, with parity gates.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("doctor", help="versions, and a self-test export + run")
    p.add_argument("--json", dest="json_path", default=None, metavar="PATH")
    p.add_argument("--no-selftest", action="store_true", help="only print versions")

    p = sub.add_parser("export", help="export a model's graphs into a bundle")
    _add_common(p, json_out=False)
    p.add_argument("--dtype", choices=("fp32", "fp16", "int8"), default="fp32")
    p.add_argument("--output-dir", default=None, help="bundle folder (default bundles/MODEL-DTYPE)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing bundle")

    p = sub.add_parser("gate", help="run a model's gate ladder against its oracle")
    _add_common(p)
    p.add_argument("--markdown", default=None, metavar="PATH", help="write the table as markdown")
    p.add_argument("--plot", default=None, metavar="PNG", help="waveforms + spectrogram diff")
    p.add_argument("--stop-on-fail", action="store_true")
    _add_bundle(p)

    p = sub.add_parser("speak", help="synthesise TEXT to a wav through the exported graphs")
    _add_common(p, json_out=False)
    p.add_argument("text")
    p.add_argument("-o", "--output", required=True, metavar="OUT.wav")
    p.add_argument("--voice", default=None)
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--ref", default=None, metavar="WAV", help="reference voice (cloning)")
    p.add_argument(
        "--exaggeration", type=float, default=0.5, help="emotion exaggeration (chatterbox)"
    )
    p.add_argument("--cfg", type=float, default=0.5, help="CFG weight (chatterbox)")
    p.add_argument("--ref-text", default=None, help="the reference clip's transcript (audio8)")
    p.add_argument(
        "--stream", action="store_true", help="decode and write audio as frames arrive (audio8)"
    )
    _add_bundle(p)

    p = sub.add_parser("bench", help="measure speed and memory; figures as a flat JSON object")
    _add_common(p)
    p.add_argument("--repeats", type=int, default=None, help="timed calls per measurement")
    _add_bundle(p)
    return parser


def _validate(args: argparse.Namespace) -> None:
    if getattr(args, "model", None) is not None:
        args.model = registry.resolve(args.model).name
    if getattr(args, "weights", None) is not None:
        args.weights = _weights(args.weights)
    for attr in ("json_path", "markdown", "plot", "output"):
        if getattr(args, attr, None):
            setattr(args, attr, writable_file(getattr(args, attr)))
    if args.verb == "speak" and not args.text.strip():
        raise UserError("TEXT is empty: give something to say")
    if getattr(args, "output_dir", None) is None and args.verb == "export":
        args.output_dir = Path("bundles") / f"{args.model}-{args.dtype}"
    if getattr(args, "output_dir", None) is not None:
        args.output_dir = Path(args.output_dir)


def write_json(path: Path | None, payload: dict) -> None:
    if path is not None:
        Path(path).write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _validate(args)
        if args.verb == "doctor":
            from .doctor import doctor

            return doctor(args)
        return int(registry.verb(args.model, args.verb)(args) or 0)
    except UserError as e:
        message = str(e).strip().splitlines()
        print(f"voxport: error: {message[0]}", file=sys.stderr)
        for line in message[1:]:
            print(f"  {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("voxport: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
