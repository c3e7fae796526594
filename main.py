"""attnscope from a checkout: `python main.py` is the `attnscope` command (make run opens the window).

The command itself lives in attnscope.cli.entry, which the installed console script calls too.
"""
import sys

from attnscope.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
