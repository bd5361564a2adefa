"""Kaldi-style config files: one ``--name=value`` per line, ``#`` comments.

``_`` and ``-`` are equivalent inside option names, a missing final newline is fine,
blank lines are ignored. Kaldi's own ``ParseOptions::ReadConfigFile`` follows the same
rules, so any ``conf/*.conf`` of a Kaldi recipe reads here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

from hybridasr.errors import ConfigError


@dataclass
class ConfigEntry:
    name: str  # normalised: dashes, no leading "--"
    value: str | None  # None for a bare "--flag"
    path: str
    lineno: int

    def as_arg(self) -> str:
        return f"--{self.name}" if self.value is None else f"--{self.name}={self.value}"


def normalize_option_name(name: str) -> str:
    """``--sample_frequency`` -> ``sample-frequency``."""
    return name.lstrip("-").replace("_", "-")


def read_config_file(path: str) -> List[ConfigEntry]:
    """Reads a Kaldi config file; raises ConfigError naming file and line on a bad line."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    entries = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.replace("\r", "")
        if "#" in line:
            line = line[: line.index("#")]
        line = line.strip()
        if not line:
            continue
        if not line.startswith("--") or len(line) < 3:
            raise ConfigError(f"{path}:{lineno}: expected --name=value, got {raw.strip()!r}")
        if "=" in line:
            name, value = line[2:].split("=", 1)
        else:
            name, value = line[2:], None
        name = name.strip()
        if not name or " " in name:
            raise ConfigError(f"{path}:{lineno}: bad option name in {raw.strip()!r}")
        entries.append(ConfigEntry(normalize_option_name(name), value, path, lineno))
    return entries


def write_config_file(path: str, options: dict, header: str | None = None) -> None:
    """Writes options as a Kaldi config file (atomically)."""
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(path, "w") as f:
        if header:
            for line in header.splitlines():
                f.write(f"# {line}\n")
        for name in sorted(options):
            value = options[name]
            if value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            f.write(f"--{normalize_option_name(name)}={value}\n")
