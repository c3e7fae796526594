"""Headless subcommands of `attnscope`. Each module in COMMANDS has ``register(subparsers)``,
which adds its parser and sets ``func`` (args -> exit code)."""

COMMANDS: list[str] = ["train", "evaluate", "translate", "compare", "export", "heads", "record", "intervene", "lens",
                       "patch", "why", "atlas"]
