"""``python -m bench`` (see ``python -m bench --help`` and bench/README.md)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
