"""What every ``pybin/`` entry point shares: Kaldi-style options, config files, logging.

Options are ``--name=value`` (or ``--name value``); ``_`` and ``-`` are equivalent in names;
``--config=file.conf`` is read first and the command line wins over it; booleans take
``true``/``false`` (Kaldi's spelling). A config line naming an unknown option is an error that
names the file and line. Entry points log to stderr with time and level and print their own command line first,
so a ``run.pl`` log explains itself.

A ``pybin/`` script looks like this::

    def get_parser():
        p = make_parser("compute_feats.py", "Computes features.",
                        usage="compute_feats.py [options] <wav-rspecifier> <feats-wspecifier>",
                        example="compute_feats.py --config=conf/mfcc.conf scp:wav.scp ark,scp:f.ark,f.scp")
        p.add_argument("--dither", type=float, default=1.0, help="...")
        add_bool(p, "--compress", False, "...")
        p.add_argument("wav_rspecifier"); ...
        return p

    def main(argv=None):
        args = get_parser().parse_args(argv)
        ...

    if __name__ == "__main__":
        run_main(main)
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from typing import Callable, List, Optional, Sequence

from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.kaldi.conf import normalize_option_name, read_config_file, write_config_file
from hybridasr.options import OptionSpec, option_specs, to_bool


def str2bool(value) -> bool:
    """Kaldi-style boolean: ``true``/``false`` (also 1/0, yes/no)."""
    try:
        return to_bool(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _BoolAction(argparse.Action):
    """A Kaldi boolean: exactly one value (``--name=true|false``). A bare ``--name`` is
    rewritten to ``--name=true`` by ``KaldiArgumentParser`` before argparse sees it, so the
    next word (a positional) is never taken as the flag's value."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def add_bool(parser, name: str, default: bool, help: str = "",
             dest: Optional[str] = None) -> None:
    """A boolean option: ``--name`` alone means true, ``--name=false`` false.

    ``parser`` may be a ``KaldiArgumentParser`` or one of its argument groups (groups share
    the parser's actions, so the parser knows its booleans either way). On a plain argparse
    parser the option keeps argparse's optional-value form (a bare flag may then take the
    next word)."""
    help = f"{help} (default: {str(default).lower()})"
    kwargs_dest = {"dest": dest} if dest else {}
    if isinstance(parser, argparse.ArgumentParser) and not isinstance(parser, KaldiArgumentParser):
        parser.add_argument(name, type=str2bool, nargs="?", const=True, default=default,
                            metavar="true|false", help=help, **kwargs_dest)
        return
    parser.add_argument(name, action=_BoolAction, type=str2bool, default=default,
                        metavar="true|false", help=help, **kwargs_dest)


def add_options(parser, declared, title: Optional[str] = None) -> None:
    """Registers the options a dataclass declares (``hybridasr.options.option`` fields, see
    there), or a list of ``OptionSpec``: command-line arguments and conf-file keys with the
    declared defaults, choices and help. ``title``: an argument group of that name for
    ``--help``."""
    specs = declared if isinstance(declared, (list, tuple)) else option_specs(declared)
    target = parser.add_argument_group(title) if title else parser
    for s in specs:
        add_option_spec(target, s)


def add_option_spec(parser, spec: OptionSpec) -> None:
    """One declared option on a parser (or an argument group)."""
    if spec.type is bool:
        add_bool(parser, spec.flag, spec.default, spec.help, dest=spec.dest)
        return
    shown = ("unset" if spec.default is None else
             f'"{spec.default}"' if spec.type is str else spec.default)
    parser.add_argument(spec.flag, dest=spec.dest, type=spec.type, default=spec.default,
                        choices=spec.choices, help=f"{spec.help} (default: {shown})")


def _normalize_argv(argv: Sequence[str]) -> List[str]:
    out = []
    for i, a in enumerate(argv):
        if a == "--":  # everything after it is positional, untouched
            return out + list(argv[i:])
        if a.startswith("--") and len(a) > 2:
            if "=" in a:
                name, value = a.split("=", 1)
                out.append(f"--{normalize_option_name(name)}={value}")
            else:
                out.append(f"--{normalize_option_name(a)}")
        else:
            out.append(a)
    return out


# Set while run_main runs an entry point: the parser then sets the log level from the parsed
# --verbose (command line or config file).
_LOG_LEVEL_FROM_ARGS = False


class KaldiArgumentParser(argparse.ArgumentParser):
    """argparse with Kaldi's option conventions and ``--config``."""

    def __init__(self, *args, example: str | None = None, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        if example:
            kwargs["epilog"] = (kwargs.get("epilog") or "") + f"e.g.: {example}"
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.add_argument("--config", action="append", default=[],
                          help="Kaldi-style config file (--name=value per line); read first, "
                               "the command line wins")
        self.add_argument("--verbose", type=int, default=0, help="verbosity: 0 info, 1 debug")
        self._config_file_options: List[str] = []

    def add_config_file_option(self, name: str, help: str) -> None:
        """Another config-file option (e.g. ``--batching-config``), read like ``--config``:
        its lines are applied after ``--config``'s and before the command line."""
        self.add_argument(name, default=None, help=help)
        self._config_file_options.append(name)

    def _known_option(self, name: str) -> bool:
        return f"--{name}" in self._option_string_actions

    def _expand_configs(self, argv: List[str]) -> List[str]:
        configs, extra, rest, i = [], [], [], 0
        while i < len(argv):
            a = argv[i]
            if a == "--":
                rest.extend(argv[i:])
                break
            if a.startswith("--config="):
                configs.append(a.split("=", 1)[1])
            elif a == "--config" and i + 1 < len(argv):
                configs.append(argv[i + 1])
                i += 1
            else:
                name = a.split("=", 1)[0]
                if name in self._config_file_options:
                    if "=" in a:
                        extra.append(a.split("=", 1)[1])
                    elif i + 1 < len(argv):
                        extra.append(argv[i + 1])
                rest.append(a)
            i += 1
        conf_args = []
        for path in configs + extra:
            for e in read_config_file(path):
                if e.name == "config" or f"--{e.name}" in self._config_file_options:
                    raise ConfigError(f"{e.path}:{e.lineno}: nested --config is not supported")
                if not self._known_option(e.name):
                    raise ConfigError(f"{e.path}:{e.lineno}: unknown option --{e.name} "
                                      f"for {self.prog}")
                conf_args.append(e.as_arg())
        self._config_files = configs
        return conf_args + rest

    def bool_options(self) -> List[str]:
        """The option strings of the ``add_bool`` options (added here or on a group)."""
        return [o for a in self._actions if isinstance(a, _BoolAction) for o in a.option_strings]

    def _bare_bools_to_true(self, argv: List[str]) -> List[str]:
        bools = set(self.bool_options())
        out = []
        for i, a in enumerate(argv):
            if a == "--":
                return out + argv[i:]
            out.append(f"{a}=true" if a in bools else a)
        return out

    def parse_args(self, args: Optional[Sequence[str]] = None, namespace=None):
        argv = list(sys.argv[1:] if args is None else args)
        argv = self._bare_bools_to_true(self._expand_configs(_normalize_argv(argv)))
        ns = super().parse_args(argv, namespace)
        ns.config = list(getattr(self, "_config_files", []))
        if _LOG_LEVEL_FROM_ARGS:
            setup_logging(getattr(ns, "verbose", 0) or 0)
        return ns

    def error(self, message):  # argparse's own errors: usage + message, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def make_parser(prog: str, description: str, usage: str | None = None,
                example: str | None = None) -> KaldiArgumentParser:
    return KaldiArgumentParser(prog=prog, description=description, usage=usage, example=example)


def options_dict(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The resolved optional arguments: not positionals, not --help/--verbose, and not the
    config-file options (--config, --batching-config, ...), whose values are already in the
    others; so a file written from it reads back with --config."""
    skip = {"help", "config", "verbose"}
    for name in getattr(parser, "_config_file_options", []):
        action = parser._option_string_actions.get(name)
        if action is not None:
            skip.add(action.dest)
    out = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in skip:
            continue
        out[action.dest] = getattr(args, action.dest, None)
    return out


def save_resolved_config(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         path: str) -> None:
    """Writes the resolved options as a Kaldi config file (command line recorded in a comment)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    header = "resolved configuration of: " + " ".join(shlex.quote(a) for a in sys.argv)
    write_config_file(path, options_dict(parser, args), header=header)


def setup_logging(verbose: int = 0) -> None:
    level = logging.DEBUG if verbose > 0 else logging.INFO
    root = logging.getLogger()
    if not root.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                         "%Y-%m-%d %H:%M:%S"))
        root.addHandler(h)
    root.setLevel(level)


def run_main(main: Callable[[Optional[List[str]]], Optional[int]],
             argv: Optional[List[str]] = None, echo_command: bool = True) -> None:
    """Runs an entry point: prints its command line (as Kaldi's binaries do; not with
    ``echo_command=False``, for a query whose output a script reads, such as json_get.py),
    turns HybridAsrError into exit 1. The process's CPU threads are limited first to the cores
    it was given (``hybridasr.utils.threads``: one unless ``--num-threads``, ``run.pl
    --num-threads`` or ``OMP_NUM_THREADS`` says more).

    Logging starts at INFO; when the entry point parses its options (with a ``make_parser``
    parser) the level follows the parsed ``--verbose`` (DEBUG for 1 or more), wherever it was
    given (``--verbose=1``, ``--verbose 1``, a ``--config`` file)."""
    global _LOG_LEVEL_FROM_ARGS
    from hybridasr.utils.threads import limit_environment

    setup_logging(0)
    limit_environment()  # the cores this process was given, before torch starts its threads
    if echo_command:
        print(" ".join(shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:]),
              file=sys.stderr, flush=True)
    _LOG_LEVEL_FROM_ARGS = True
    try:
        rc = main(argv)
    except HybridAsrError as e:
        logging.getLogger(os.path.basename(sys.argv[0])).error("%s", e)
        sys.exit(1)
    except KeyboardInterrupt:
        logging.getLogger(os.path.basename(sys.argv[0])).error("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    finally:
        _LOG_LEVEL_FROM_ARGS = False
    sys.exit(rc or 0)
