"""``python -m trio_broker``: the same as the ``trio-broker`` command."""

import sys

from .server.main import main

sys.exit(main())
