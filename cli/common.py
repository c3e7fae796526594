"""What the subcommands share: opening a checkpoint with a clean error, printing JSON."""
from __future__ import annotations

import json
import sys


def open_or_explain(path: str, device: str = "cpu"):
    """The model at ``path``, or None after a one-line message on stderr (no traceback)."""
    from engine.catalog import open_model
    from engine.checkpoint import CheckpointError

    try:
        return open_model(path, device)
    except (CheckpointError, FileNotFoundError, ValueError, OSError) as exc:
        print(f"attnscope: {exc}", file=sys.stderr)
        return None


def print_json(obj) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2))


BAD_INPUT = 2  # exit code for a file or argument attnscope cannot use
