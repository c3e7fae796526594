"""Every Python example in docs/python.md runs as written (tiny random models, on the CPU).

Why: a documented example that no longer runs is worse than none; this reads the page's
```python blocks and executes each in a fresh namespace.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"docs/python.md example {index + 1}", "exec"), {"__name__": "__doc_example__"})
    assert capsys.readouterr().out.strip()   # every example prints what it shows
