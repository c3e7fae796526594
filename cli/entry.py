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
    from attnscope.cli import COMMANDS
    from attnscope.cli.common import OneLineParser, device

    from attnscope.engine import version

    parser = OneLineParser(prog="attnscope", description=__doc__.splitlines()[0])
    # one place for the number: pyproject's version, as attnscope.__version__ reads it too
    parser.add_argument("--version", action="version", version=f"attnscope {version()}")
    parser.add_argument("--device", default=None, type=device,
                        help="auto, cpu, cuda, cuda:N, mps, or spread (a Hugging Face model over every GPU, then "
                             "the RAM, then the disk; needs accelerate). Default: the saved setting, else auto")
    parser.add_argument("--model", default=None, help="checkpoint or Hugging Face folder to open in the window")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"attnscope.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from attnscope.engine.runtime import keep_freed_memory

    keep_freed_memory()  # before any thread starts; a 512-token Run no longer faults its weights in anew
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the exact command, recorded in what it makes (e.g. a checkpoint)
    if args.command is None:
        from attnscope.gui.app import run_app

        return run_app(args)
    return run_command(args)


def run_command(args) -> int:
    """A subcommand, with the last line of defence: whatever a command did not refuse itself
    still ends in one line and a non-zero status, never a traceback. Bad input the commands
    know (files, texts, options) exits 2; anything else is a bug and exits 1
    (ATTNSCOPE_DEBUG=1 shows its traceback)."""
    import os

    from attnscope.cli.common import BAD_INPUT, say, stdout_for_results_only

    try:
        with stdout_for_results_only():
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except (ValueError, OSError) as exc:  # ModelLoadError, InputError, an unknown device, a full disk, ...
        if os.environ.get("ATTNSCOPE_DEBUG"):
            raise
        say(_said_of_os_error(exc) if isinstance(exc, OSError) else exc)
        return BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - a bug: one line that says so, not a traceback
        if os.environ.get("ATTNSCOPE_DEBUG"):
            raise
        say(f"internal error ({type(exc).__name__}: {exc}); this is a bug, please report it with the command. "
            "ATTNSCOPE_DEBUG=1 shows the details.")
        return 1


def _said_of_os_error(exc: OSError) -> str:
    """An OSError as one sentence: a name too long for the file system said so (the OS's raw
    "[Errno 36] File name too long: '...'" quoted all 5,000 characters), any other as it is."""
    import errno

    if exc.errno == errno.ENAMETOOLONG:
        name = str(exc.filename or "")
        shown = name if len(name) <= 60 else f"{name[:40]}…{name[-12:]}"
        return f"A file name is too long for the file system ({len(name):,} characters: {shown}); give a shorter one."
    return str(exc)


