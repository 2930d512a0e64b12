"""Generated package (engine_service.proto_gen)."""
