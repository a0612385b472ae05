"""`python -m pypto_lab`: see `pypto_lab.cli`."""
from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
