"""What the request table says about a request: its API name and the error it ended with.

API names are those of Kafka's request metrics (``kafka.network:type=RequestMetrics,
request=...``): the API's name from :data:`apis.api_table.API_TABLE`, except that fetches are
split by who sends them, ``FetchConsumer`` and ``FetchFollower``. A response's error is the
first error it carries (top-level, then per partition or topic in the response's order) that
is not NONE, else NONE.
"""

from __future__ import annotations

from apis.api_table import api_of, response_errors
from apis.fetch import FetchRequest
from apis.request_channel import RequestBody, ResponseBody
from replica.errors import Errors
from replica.types import NO_ERROR

__all__ = ["api_name", "response_error"]


def api_name(body: RequestBody) -> str:
    """Kafka's request-metrics name of ``body`` (``Produce``, ``FetchFollower``...)."""
    if isinstance(body, FetchRequest):
        return "FetchFollower" if body.replica_id >= 0 else "FetchConsumer"
    return api_of(body).name


def response_error(body: ResponseBody) -> Errors:
    """The first error ``body`` reports (see the module docstring)."""
    for error in response_errors(body):
        if error is not NO_ERROR:  # Errors.NONE, read as a module constant (replica.types)
            return error
    return NO_ERROR
