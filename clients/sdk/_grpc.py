"""grpcio ships no type information: import it here once (as Any) for the SDK's modules."""

from __future__ import annotations

import grpc as grpc  # type: ignore[import-untyped]
from grpc import aio as aio

__all__ = ["aio", "grpc"]
