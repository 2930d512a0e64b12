"""gRPC health check of the engine (the chart runs this file with `python -c`).

The `helm test` health pod runs it against the engine Service; with TLS on the gRPC port the
engine's own startup, readiness and liveness probes run it against 127.0.0.1 (the kubelet's
gRPC probe speaks plaintext only). TLS and the client certificate (mTLS) come from the
ASCENSION_TLS_* variables, as for every client of the engine (docs/security.md).
Arguments: the gRPC target. Exit 0 when the engine answers SERVING.
"""

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.sdk.tls import TLS, channel

target = sys.argv[1]
serving = health_pb2.HealthCheckResponse.SERVING
with channel(target, TLS.from_env(), []) as ch:
    try:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=4)
    except grpc.RpcError as error:
        sys.exit(f"{target}: {error.code().name}: {error.details()}")
status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
print(target, status)
sys.exit(0 if reply.status == serving else 1)
