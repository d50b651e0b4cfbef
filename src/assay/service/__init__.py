"""The evaluation service: CES-style resources over REST (and MCP) backed by the store.

`create_app(store)` builds the FastAPI application; `assay serve` runs it.
"""

from assay.service.app import create_app
from assay.service.context import ServiceContext

__all__ = ["ServiceContext", "create_app"]
