"""Fixtures of the reliability tests: the service tests' throwaway Redis (each test that kills
or restarts Redis starts its own, see redis_proc.py)."""

from tests.service.conftest import redis_url

__all__ = ["redis_url"]
