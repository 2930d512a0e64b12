"""The browser client: ``ascension web`` serves the page and the Engine API over Connect/gRPC-Web.

``app/`` holds the TypeScript sources (stubs generated from ``proto/``, built with Vite from a
committed lockfile); ``static/`` holds the built page, committed and shipped as package data so
that ``pip install`` gives a working ``ascension web`` without Node.js. ``gateway.py`` answers the
browser protocols by forwarding each call to the engine's gRPC servicer; ``serve.py`` puts the
page and the gateway on one origin. Rebuild with ``python -m clients.web.build``.
"""
