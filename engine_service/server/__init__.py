"""The stateless gRPC engine service: ``ascension-engine serve``."""
