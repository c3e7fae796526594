"""attnscope: look inside transformers.

`attnscope` with no arguments opens the window; subcommands (train, eval, translate,
generate, compare, export, ...) run headless. Each subcommand lives in its own module under
cli/ and registers itself through ``cli.COMMANDS``.
"""
from __future__ import annotations

import argparse
import importlib
import sys


def build_parser() -> argparse.ArgumentParser:
    from cli import COMMANDS

    parser = argparse.ArgumentParser(prog="attnscope", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="auto, cpu, cuda or mps (default: the saved setting, else auto)")
    parser.add_argument("--model", default=None, help="checkpoint or Hugging Face folder to open in the window")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the exact command, recorded in what it makes (e.g. a checkpoint)
    if args.command is None:
        from gui.app import run_app

        return run_app(args)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
