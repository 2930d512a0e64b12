"""Runnable examples of the Python SDK (``python -m clients.sdk.examples.quickstart``)."""
