"""What the subcommands share: one-line errors, checked arguments, opening a model cleanly, JSON.

Every bad input ends in one line on stderr and exit status 2 (``BAD_INPUT``): option values
are checked by the argument parser (the message gives the allowed range), models by
engine.loading.catalog.open_model (one error type, ModelLoadError), texts before any tokenizer.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import textwrap
from pathlib import Path

BAD_INPUT = 2  # exit code for a file or argument attnscope cannot use


def say(message: object) -> None:
    """One line on stderr, prefixed with the program name."""
    text = " ".join(str(message).split())
    print(f"attnscope: {text}", file=sys.stderr)


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block), exit status 2, and
    finds a command's positional text wherever it was typed (``late_text``)."""

    def parse_args(self, args=None, namespace=None):
        return late_text(self, *self.parse_known_args(args, namespace))

    def format_help(self) -> str:
        """The help, and where a command takes a MODEL, the short names every command accepts
        (engine.loading.catalog.resolve_name: "gpt", "translator", minilm, random-<family>)."""
        text = super().format_help()
        if any(action.dest in ("model", "checkpoint") for action in self._actions):
            from attnscope.engine.loading import models_help

            text += "\n" + textwrap.fill(models_help(), 100) + "\n"
        return text

    def error(self, message: str):
        self.exit(BAD_INPUT, f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


# ---- argument types: each checks its value and says what is allowed --------------------------------
MAX_DIGITS = 7            # positions, layers and heads up to 9,999,999: past any text or model


def shown(value: str) -> str:
    """A value quoted for a message, cut to 40 characters (a 5,000-digit value is not echoed)."""
    said = repr(value)
    return said if len(said) <= 40 else said[:36] + "...'"


def whole_number(value: str, what: str, lo: int = 0, hi: int = 10 ** MAX_DIGITS - 1) -> int:
    """The one number parser of every command: ASCII digits only (str.isdigit takes '²' and
    int() takes '٣', '+5', '5_000' and ' 5'), a minus sign only where lo < 0, no more digits
    than hi has past leading zeros (int() of 5,000 digits is slow and quoted back whole),
    then lo..hi."""
    body = value[1:] if value[:1] == "-" and lo < 0 else value
    longest = len(str(max(abs(lo), abs(hi))))
    if not (body.isascii() and body.isdecimal() and len(body) <= 64 and len(body.lstrip("0")) <= longest):
        raise argparse.ArgumentTypeError(f"{what} is a whole number from {lo:,} to {hi:,} in the digits 0-9, "
                                         f"got {shown(value)}")
    number = int(value)
    if not lo <= number <= hi:
        raise argparse.ArgumentTypeError(f"{what} must be from {lo:,} to {hi:,}, got {number:,}")
    return number


def int_in(lo: int, hi: int, what: str = "the value"):
    def parse(text: str) -> int:
        return whole_number(text, what, lo, hi)
    parse.__name__ = "whole number"
    return parse


def float_in(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False):
    left, right = "(" if lo_open else "[", ")" if hi_open else "]"
    allowed = f"{left}{lo:g}, {hi:g}{right}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in {allowed}, got {text!r}") from None
        inside = math.isfinite(value) and (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
        if not inside:
            raise argparse.ArgumentTypeError(f"must be a number in {allowed}, got {text}")
        return value
    parse.__name__ = "number"
    return parse


def text(value: str) -> str:
    """A text argument: valid Unicode (invalid UTF-8 on a command line arrives as lone surrogates)."""
    from attnscope.engine.inputs import text_problem

    problem = text_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def add_text_options(p, *, positional: str | None = None, required: bool = True, default: str | None = None,
                     chat: bool = False, help: str | None = None) -> None:
    """The text a command reads: ``--text`` (or the positional argument named ``positional``), or
    ``--text-file F``, for a text a command line cannot carry (Linux caps one argument at 128 KB:
    a 32k-token text). ``chat``: ``--chat`` (and ``--system``) read the text as a user's turn through
    the tokenizer's own chat template. ``text_of(args)`` gives the text."""
    if positional:
        p.add_argument("text", metavar=positional, nargs="?", type=text, default=None, help=help)
        p.add_argument("--text-file", type=Path, default=None, help=f"a UTF-8 file holding the {positional} "
                                                                     "(a long context)")
    else:
        source = p.add_mutually_exclusive_group(required=required)
        source.add_argument("--text", type=text, default=None, help=help)
        source.add_argument("--text-file", type=Path, default=None, help="a UTF-8 file holding the text (a long context)")
    p.set_defaults(text_default=default, text_required=required, text_name=positional or "--text")
    if chat:
        p.add_argument("--chat", action="store_true", help="a chat model: the text is the user's turn, read through the "
                                                           "tokenizer's own chat template with the reply's start added")
        p.add_argument("--system", type=text, default=None, help="with --chat: a system turn before the user's")


def late_text(parser, args, extra: list[str]):
    """``args`` with a command's positional text put back where argparse missed it: an optional
    positional after the model is matched together with it, so in ``translate MODEL --beam-width 4
    "text"`` the text arrives among the unknown arguments. Anything else unknown is the parser's
    one-line error, as ``parse_args`` gives."""
    if extra and getattr(args, "text_name", "--text") != "--text" and getattr(args, "text", None) is None \
            and len(extra) == 1 and not extra[0].startswith("-"):
        try:
            args.text, extra = text(extra[0]), []
        except argparse.ArgumentTypeError as exc:
            parser.error(f"argument {args.text_name}: {exc}")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def text_of(args):
    """The text ``add_text_options`` asked for: the argument, or the file read by the one reader
    (engine.inputs.read_utf8), or the command's default; with ``--chat`` an engine.inputs.Chat.
    None when the command may go without one; InputError (one sentence, exit 2) otherwise."""
    from attnscope.engine.inputs import Chat, InputError, read_utf8

    given, path = getattr(args, "text", None), getattr(args, "text_file", None)
    if given is not None and path is not None:
        raise InputError(f"Give the text as {args.text_name} or as --text-file, not both.")
    body = read_utf8(path) if path is not None else given
    body = body if body is not None else args.text_default
    if body is None and args.text_required:
        raise InputError(f"Give a text: {args.text_name} TEXT or --text-file FILE.")
    if getattr(args, "system", None) is not None and not getattr(args, "chat", False):
        raise InputError("--system is a turn of a chat: give --chat too.")
    if body is not None and getattr(args, "chat", False):
        return Chat.of(body, system=args.system)
    return body


MAX_IMAGE_SIDE = 8192


def image_size(value: str) -> tuple[int, int]:
    """WxH in pixels, each side from 16 to MAX_IMAGE_SIDE (an 8192x8192 image is 256 MiB)."""
    parts = value.lower().split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels such as 1200x800, got {value!r}") from None
    if not (16 <= w <= MAX_IMAGE_SIDE and 16 <= h <= MAX_IMAGE_SIDE):
        raise argparse.ArgumentTypeError(f"each side must be from 16 to {MAX_IMAGE_SIDE} pixels, got {w}x{h}")
    return w, h


def out_folder(value: str) -> Path:
    """A folder to write into: it may not exist yet, but must not be a file
    (``writable_problem`` then tries it for real, before the work starts)."""
    path = Path(value).expanduser()
    _fits(path, "--out folder")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a file; give a folder to write into")
    return path


def _fits(path: Path, what: str) -> None:
    """argparse's one sentence for a name too long for the file system (exists() would raise)."""
    from attnscope.engine.inputs import too_long

    said = too_long(path, what)
    if said:
        raise argparse.ArgumentTypeError(said)


def writable_problem(folder: Path) -> str | None:
    """Why nothing can be written into ``folder`` (None if it can): it is created if missing and a
    temporary file is written and removed there, so a bad path fails before any work, not after."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"cannot write into {folder}: {exc.strerror or exc}"
    return None


def kept_file(path: Path, force: bool) -> str | None:
    """Why ``path`` is not written (None if it may be): an existing file is the user's until
    --force says otherwise (export replaced grid.png or trace.npz without a word, issue 58)."""
    if force or not (path.exists() or path.is_symlink()) or _an_export(path):
        return None
    return f"{path} already exists: attnscope will not write over it; choose another --out folder, or add --force"


def _an_export(path: Path) -> bool:
    """Whether ``path`` is a regular file attnscope's export wrote, known by its content: an NPZ
    with export's members (what, model_name, notes), a CSV with export's header. An image carries
    no such mark, so it is never replaced without --force."""
    import zipfile

    try:
        if not path.is_file() or path.is_symlink():
            return False
        if path.suffix == ".npz":
            with zipfile.ZipFile(path) as z:
                return {"what.npy", "model_name.npy", "notes.npy"} <= set(z.namelist())
        if path.suffix == ".csv":
            with open(path, "rb") as f:
                return f.readline(200).startswith(b"kind,layer,head,")
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
    return False


def out_checkpoint(value: str) -> Path:
    """A .safetensors file to save to, checked before any training starts."""
    from attnscope.engine.loading import CheckpointError, check_checkpoint_path

    _fits(Path(value).expanduser(), "checkpoint")
    try:
        return check_checkpoint_path(Path(value).expanduser())
    except CheckpointError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def device(value: str) -> str:
    from attnscope.engine.runtime import CHOICES

    kind, _, index = value.strip().lower().partition(":")
    if kind not in CHOICES or (index and not (kind == "cuda" and index.isascii() and index.isdecimal()
                                                and len(index) <= 3)):
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(CHOICES)} (or cuda:N), got {shown(value)}")
    return value


# ---- opening models --------------------------------------------------------------------------------
def open_or_explain(path: str, device: str = "cpu"):
    """The model at ``path``, or None after a one-line message on stderr (no traceback).
    A load that takes a while shows a progress bar on stderr, on a terminal only (a script
    reading stderr sees errors alone)."""
    from attnscope.engine.loading import open_model

    bar = LoadBar()
    try:
        return open_model(path, device, progress=bar)
    except (ValueError, OSError) as exc:  # ModelLoadError is a ValueError; so is an unknown device
        bar.close()
        say(exc)
        return None
    finally:
        bar.close()


def open_predicting(path: str, device: str, needs: str):
    """Like ``open_or_explain``, for a command that reads next-token predictions: an encoder
    is refused in one line saying what ``needs`` them (None then). A model served by NDIF
    (``generates`` False: it cannot be stepped here) is not an encoder: what reads it there does."""
    from attnscope.engine.inputs import InputError
    from attnscope.results import check_predicting

    loaded = open_or_explain(path, device)
    if loaded is not None:
        try:
            check_predicting(loaded, needs)
        except InputError as exc:
            say(exc)
            return None
    return loaded


class LoadBar:
    """attnscope.engine.loading.progress records as a tqdm bar on stderr, in percent with the loader's
    words (tensors built, bytes read). Shown only on a terminal and only for a load that has
    taken LOAD_BAR_DELAY_S: a small model opens without a flash of bar."""

    def __init__(self):
        self.bar = None

    def __call__(self, record) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=100, file=sys.stderr, delay=LOAD_BAR_DELAY_S, leave=False, unit="%",
                            disable=not sys.stderr.isatty(), bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}")
        self.bar.set_description_str(record.text, refresh=False)
        self.bar.update(round(100 * record.fraction) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


LOAD_BAR_DELAY_S = 0.5


_RESULT_STREAMS: list = []     # where a command's JSON goes while stdout is lent to stderr


@contextlib.contextmanager
def stdout_for_results_only():
    """While a command runs, stdout carries its JSON alone: what a library prints meanwhile goes
    to stderr. Why: nnsight prints its job's status lines to stdout when its debug mode is on
    (NNSIGHT_DEBUG, or a ``-v`` anywhere in the command line), and `attnscope lens ndif:... | jq`
    then read "[remote] payload: ..." before the JSON."""
    _RESULT_STREAMS.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _RESULT_STREAMS.pop()


def print_json(obj) -> None:
    out = _RESULT_STREAMS[-1] if _RESULT_STREAMS else sys.stdout
    print(json.dumps(obj, ensure_ascii=False, indent=2), file=out, flush=True)
