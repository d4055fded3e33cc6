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


class ConfigurationError(HippographError):
    """The settings cannot work (unknown backend, mismatched vector size, unreadable data dir)."""


class ExtractionError(HippographError):
    """An extractor failed on an input; the raw input is kept and extraction can be retried."""


class InsufficientStorage(HippographError):
    """The disk holding the data is (nearly) full: a write was refused or rolled back, nothing acknowledged
    was lost, and writes resume by themselves once space is freed. Reads go on meanwhile."""
