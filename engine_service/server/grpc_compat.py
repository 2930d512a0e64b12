"""grpcio ships no type information: import it here once, as Any, for the server's modules.
(With ``types-grpcio`` installed this shim could go.)"""

from __future__ import annotations

import grpc as grpc  # type: ignore[import-untyped]
from grpc import aio as aio

__all__ = ["aio", "grpc"]
