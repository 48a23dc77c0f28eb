"""The real Redis and PostgreSQL of ``tests/helpers/servers.py``, for ``serve --state``."""

from tests.helpers.servers import (  # noqa: F401 - fixtures
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)
