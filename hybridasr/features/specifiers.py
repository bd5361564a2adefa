"""Kaldi rspecifier/wspecifier forms our feature tools accept (a light module: no torch)."""
from __future__ import annotations

from hybridasr.errors import ConfigError


def text_table_path(spec: str) -> str:
    """``ark,t:path`` / ``ark:path`` / ``path`` -> ``path`` (text tables only)."""
    if ":" in spec:
        kinds, path = spec.split(":", 1)
        if "ark" not in kinds.split(","):
            raise ConfigError(f"{spec!r}: expected a text archive, e.g. ark,t:{path}")
        return path
    return spec


def rspecifier_path(spec: str) -> str:
    """``scp:wav.scp`` / ``scp,p:wav.scp`` -> ``wav.scp`` (our inputs are scp files)."""
    if ":" not in spec:
        raise ConfigError(f"bad rspecifier {spec!r}: expected scp:<wav.scp>")
    kinds, path = spec.split(":", 1)
    if "scp" not in kinds.split(","):
        raise ConfigError(f"rspecifier {spec!r} is not supported: give scp:<wav.scp> "
                          f"(with --segments=<file> instead of an extract-segments pipe)")
    return path
