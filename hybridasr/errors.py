"""Errors that mean "bad input": the message names the file, line or utterance."""


class HybridAsrError(Exception):
    """A user-facing error; entry points print it without a traceback and exit non-zero."""


class ConfigError(HybridAsrError):
    """A bad option or config file line."""


class FormatError(HybridAsrError):
    """A file that is not in the expected Kaldi format."""


class OutputError(HybridAsrError, OSError):
    """A file that could not be written (no space left on device, over quota, permissions):
    the message names the file. Still an ``OSError`` (``errno`` set), so code that handles
    write failures keeps handling it."""

    def __init__(self, message: str, errno: int = 0):
        super().__init__(message)
        self.errno = errno or None
