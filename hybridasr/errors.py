"""Errors that mean "bad input": the message names the file, line or utterance."""


class HybridAsrError(Exception):
    """A user-facing error; entry points print it without a traceback and exit non-zero."""


class ConfigError(HybridAsrError):
    """A bad option or config file line."""


class FormatError(HybridAsrError):
    """A file that is not in the expected Kaldi format."""
