"""``ascension-engine serve``: run the engine (configuration: docs/configuration.md)."""

from __future__ import annotations

import argparse
import sys

from engine_service import telemetry
from engine_service.server import config


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ascension-engine", description="The Ascension engine gRPC service."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="run the gRPC server (flags override environment variables)",
        description="Run the gRPC server. Every flag mirrors an environment variable.",
    )
    config.add_flags(serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = config.load(flags=args)
        if settings.processes > 1:  # the server processes set up tracing themselves
            telemetry.configure_logging(settings.log_level)
        else:
            # Tracing (ASCENSION_TRACING, off by default) and LOG_FORMAT: docs/operations.md.
            telemetry.configure_tracing("ascension-engine")
            telemetry.configure_logging(settings.log_level)
    except ValueError as e:
        print(f"ascension-engine: configuration error: {e}", file=sys.stderr)
        return 2
    if settings.processes > 1:
        from engine_service.server import processes

        return processes.run(settings)
    telemetry.instrument_engine()
    from engine_service.server.app import StoreUnreachable, run, serve

    try:
        run(serve(settings), settings.event_loop)
    except KeyboardInterrupt:
        return 130
    except StoreUnreachable as e:
        print(f"ascension-engine: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"ascension-engine: {e}", file=sys.stderr)
        return 1
    finally:
        telemetry.shutdown_tracing()
    return 0


if __name__ == "__main__":
    sys.exit(main())
