"""``python -m aerix run --base-url URL --model NAME "prompt"``: see :mod:`aerix.cli`."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
