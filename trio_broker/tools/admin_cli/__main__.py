"""``python -m trio_broker.tools.admin_cli``: the same as ``trio-broker-admin``."""

import sys

from .cli import main

sys.exit(main())
