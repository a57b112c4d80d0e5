"""Every message this broker speaks, one module per API family.

Importing this package registers them all with ``protocol.api``.
"""

from . import api_versions, metadata

__all__ = ["api_versions", "metadata"]
