"""moto's S3 server with a fixed delay before every response, like a real S3 endpoint's latency.

    python -m tests.benchmarks.latency_moto --port PORT --latency-ms 20

The same application and threaded werkzeug server as `moto_server`; the delay is a sleep, which
releases the GIL, so concurrent requests wait in parallel as they would on the network.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

from tests.support.scratch import for_a_program


def delayed(app: Callable[..., Iterable[bytes]], seconds: float) -> Callable[..., Any]:
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        time.sleep(seconds)
        return app(environ, start_response)

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, required=True)
    args = parser.parse_args()
    app = delayed(DomainDispatcherApplication(create_backend_app), args.latency_ms / 1000)
    run_simple("127.0.0.1", args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    with for_a_program():
        main()
