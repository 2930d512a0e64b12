"""Generated gRPC stubs of the ``ascension.v1`` API (``python -m engine_service.proto_gen``).

Import e.g. ``from engine_service.api.ascension.v1 import engine_pb2, engine_pb2_grpc``.
This package depends on protobuf and grpcio only, never on the rules core.
"""
