"""``python -m spark_jobs.balance``: runs ``cli.main``.

Must not: hold anything but the entry point.
"""

from __future__ import annotations

import sys

from spark_jobs.balance.cli import main

if __name__ == "__main__":
    sys.exit(main())
