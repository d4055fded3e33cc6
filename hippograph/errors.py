"""The one error hierarchy of Hippograph. Native errors are mapped into it at the store boundary."""


class HippographError(Exception):
    """Base class of every error Hippograph raises on purpose."""


class NotFound(HippographError):
    """The user, item or entity asked for does not exist."""


class Conflict(HippographError):
    """The request contradicts what is stored (e.g. a client id reused for other content)."""


class InvalidInput(HippographError):
    """The request is well-formed JSON but cannot be served as it is."""


class BackendUnavailable(HippographError):
    """A store or model cannot be reached or opened; nothing was acknowledged."""


Unavailable = BackendUnavailable  # the SDK's name for it


class ConfigurationError(HippographError):
    """The settings cannot work (unknown backend, mismatched vector size, unreadable data dir)."""


class ExtractionError(HippographError):
    """An extractor failed on an input; the raw input is kept and extraction can be retried."""


class ExtractionStalled(BackendUnavailable):
    """The extraction process died or ran past its time on a call: unlike a model server that is down,
    the messages of the call may be the cause, so their attempts count towards quarantine."""


class DataRejected(InvalidInput):
    """A store refused a value of the request as it is (too large for one of its index keys, say)."""


class Unauthorized(HippographError):
    """No API key, or one that is unknown or revoked."""


class Forbidden(HippographError):
    """The API key is valid but lacks the scope the operation needs."""


class RateLimited(HippographError):
    """Too many requests for this API key; `retry_after` says when to try again (seconds)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InsufficientStorage(HippographError):
    """The disk holding the data is (nearly) full: a write was refused or rolled back, nothing acknowledged
    was lost, and writes resume by themselves once space is freed. Reads go on meanwhile."""
