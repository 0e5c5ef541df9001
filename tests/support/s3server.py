"""moto's S3 server on 127.0.0.1 (real HTTP, not the in-process mock), for tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

# Dummy credentials for the test endpoint only; moto accepts any.
TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing-access-key",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
# Settings from the developer's machine that must not leak into a test.
CLEARED_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


@contextmanager
def moto_s3_server() -> Iterator[str]:
    """Start moto's threaded server on a free port of 127.0.0.1; yield its URL; always stop it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()
