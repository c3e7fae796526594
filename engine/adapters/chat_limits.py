"""A model's chat template, run with limits: it is code from the model's author.

Why: transformers renders a chat template in Jinja's sandbox, which keeps a template from
reaching Python's internals but not from running long or writing much. Found in the wild (issue
46): a template whose output is 30 MB made the Rust tokenizer abort the whole process
("memory allocation of 67108864 bytes failed") after ~60 s at 6.9 GB; one that writes
``'xy ' * 1000000000`` took 6 GB before a MemoryError; two nested ``range(100000)`` loops hung.

``limited_rendering()`` makes transformers' own ``apply_chat_template`` (its arguments, its
message clean-up, its tokenization, unchanged) compile the template in an environment that is
transformers' own plus three limits, each refused in one sentence (TemplateLimit):

- output: at most MAX_OUTPUT_CHARS characters (16 Mi, the size of the largest text file attnscope
  reads), counted as the template writes them;
- repetition: a string or list repeated (``*``) past that size is refused before it is built;
- time: MAX_SECONDS of rendering, checked on every line the compiled template runs (a loop that
  writes nothing is stopped too).

It reaches transformers through one private name (``chat_template_utils._compile_jinja_template``,
looked up by ``render_jinja_template`` at each call); where that name is missing (another
version), the template runs as transformers runs it and only the output's size is checked after.
"""
from __future__ import annotations

import contextlib
import functools
import re
import sys
import threading
import time

from attnscope.engine.inputs import MAX_TEXT_FILE_BYTES

MAX_OUTPUT_CHARS = MAX_TEXT_FILE_BYTES      # 16 Mi: as large as a text file attnscope reads
MAX_SECONDS = 5.0                           # a real template renders in milliseconds
TEMPLATE_FILE = "<template>"                # the file name Jinja gives code compiled from a string
_lock = threading.Lock()                    # one rendering at a time swaps transformers' compiler


class TemplateLimit(RuntimeError):
    """A chat template that went past a limit, said in one sentence."""


@functools.lru_cache(maxsize=16)
def _limited_template(chat_template: str):
    """``chat_template`` compiled as transformers compiles it, in an environment with the limits."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from transformers.utils import chat_template_utils as ctu

    # transformers' filters, globals and extensions, from a template of nothing: compiling the
    # user's template there would fold its constants ('xy ' * 1000000000) at compile time
    own = ctu._cached_compile_jinja_template("").environment

    class LimitedTemplate(jinja2.Template):
        def render(self, *args, **kwargs) -> str:
            """Jinja's render, its output counted as it is written."""
            context = self.new_context(dict(*args, **kwargs))
            parts, size = [], 0
            try:
                for part in self.root_render_func(context):
                    size += len(part)
                    if size > MAX_OUTPUT_CHARS:
                        raise TemplateLimit(f"it writes more than {MAX_OUTPUT_CHARS:,} characters")
                    parts.append(part)
            except TemplateLimit:
                raise
            except Exception:  # noqa: BLE001 - Jinja's own handling: its message, the template's line
                self.environment.handle_exception()
            return "".join(parts)

    class LimitedEnvironment(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "%"])
        template_class = LimitedTemplate

        def call_binop(self, context, operator, left, right):
            if operator == "*":
                for seq, times in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(times, int) and \
                            len(seq) * times > MAX_OUTPUT_CHARS:
                        raise TemplateLimit(f"it builds a text of {len(seq) * times:,} characters")
            if operator == "%" and isinstance(left, str):
                _check_widths(left, _PERCENT_WIDTH)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's own signature
            _check_call(__obj, args)
            return super().call(__context, __obj, *args, **kwargs)

    env = LimitedEnvironment(trim_blocks=own.trim_blocks, lstrip_blocks=own.lstrip_blocks,
                             extensions=[type(e) for e in own.extensions.values()])
    env.filters.update(own.filters)
    env.globals.update(own.globals)
    return env.from_string(chat_template)


_PERCENT_WIDTH = re.compile(r"%[-#0 +]*(\d+)?(?:\.(\d+))?")
_FORMAT_WIDTH = re.compile(r"\{[^{}]*?:[^{}]*?(\d+)(?:\.(\d+))?[^{}]*\}")


def _check_widths(text: str, pattern) -> None:
    """TemplateLimit when a format in ``text`` asks for a field wider than the output may be."""
    for match in pattern.finditer(text[:MAX_OUTPUT_CHARS]):
        for number in match.groups():
            if number and (len(number) > 9 or int(number) > MAX_OUTPUT_CHARS):
                raise TemplateLimit(f"it formats a field {int(number):,} characters wide")


def _check_call(obj, args) -> None:
    """TemplateLimit before a string method builds a text past the output limit (one Python call
    inside one template line: the clock between lines never sees it)."""
    owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    if not isinstance(owner, str):
        return
    if name in ("center", "ljust", "rjust", "zfill") and args and isinstance(args[0], int) \
            and args[0] > MAX_OUTPUT_CHARS:
        raise TemplateLimit(f"it pads a text to {args[0]:,} characters")
    if name == "format":
        _check_widths(owner, _FORMAT_WIDTH)
    if name == "expandtabs" and args and isinstance(args[0], int) and args[0] * owner.count("\t") > MAX_OUTPUT_CHARS:
        raise TemplateLimit("it expands tabs past the output limit")
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        grows = (len(owner) // max(len(args[0]), 1) + 1) * len(args[1])
        if len(owner) + grows > MAX_OUTPUT_CHARS and owner.count(args[0]) * len(args[1]) > MAX_OUTPUT_CHARS:
            raise TemplateLimit(f"it replaces into a text past {MAX_OUTPUT_CHARS:,} characters")
    if name == "join" and args and isinstance(args[0], (list, tuple)) and \
            len(owner) * len(args[0]) > MAX_OUTPUT_CHARS:
        raise TemplateLimit(f"it joins a text past {MAX_OUTPUT_CHARS:,} characters")


@contextlib.contextmanager
def _deadline(seconds: float):
    """Raise TemplateLimit in the template's own code once ``seconds`` have passed (this thread)."""
    end = time.monotonic() + seconds

    def on_line(frame, event, _arg):
        if event == "line" and time.monotonic() > end:
            raise TemplateLimit(f"it ran longer than {seconds:g} s")
        return on_line

    def on_call(frame, _event, _arg):
        return on_line if frame.f_code.co_filename == TEMPLATE_FILE else None

    before = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(before)


@contextlib.contextmanager
def limited_rendering(lock: bool = True):
    """While inside, transformers renders chat templates with the limits (see the module's
    docstring); TemplateLimit when one is passed. ``lock=False`` in a forked child (chat_process):
    it has one thread, and a lock another thread held at the fork would never be released."""
    from transformers.utils import chat_template_utils as ctu

    if not hasattr(ctu, "_compile_jinja_template") or not hasattr(ctu, "_cached_compile_jinja_template"):
        yield                                   # another transformers: its own rendering, size checked after
        return
    with (_lock if lock else contextlib.nullcontext()):
        own = ctu._compile_jinja_template
        ctu._compile_jinja_template = _limited_template
        try:
            with _deadline(MAX_SECONDS):
                yield
        finally:
            ctu._compile_jinja_template = own
