"""Kaldi rspecifiers and wspecifiers: the one parser every table reader and writer uses.

As Kaldi's ``ClassifyRspecifier`` / ``ClassifyWspecifier`` (``util/kaldi-table.cc``) accept them:

- rspecifier ``<opts>:<rxfilename>``: exactly one of ``ark`` / ``scp``, and any of ``b``, ``t``
  (ignored on input), ``o``/``no`` (once), ``s``/``ns`` (sorted), ``cs``/``ncs`` (called
  sorted), ``p``/``np`` (permissive), ``bg`` (background). E.g. ``ark,s,cs:-``,
  ``scp,p:feats.scp``, ``ark:gunzip -c ali.*.gz|``.
- wspecifier ``<opts>:<wxfilename>``: ``ark``, ``scp`` or ``ark,scp`` (in that order; then the
  filenames are ``<ark>,<scp>``, split at the first comma), and any of ``b``/``t`` (binary or
  text), ``f``/``nf`` (flush), ``p`` (permissive). E.g. ``ark,t:-``, ``ark,scp,f:a.ark,a.scp``,
  ``ark:| gzip -c > ali.1.gz``.

An rxfilename is a file, ``-`` (stdin) or ``command |``; a wxfilename a file, ``-`` (stdout)
or ``| command`` (``hybridasr.kaldi.io.streams``). Options may be separated by commas or spaces
(``ark, t``: more lenient than Kaldi, as our tools always were), and the filename is stripped
of surrounding spaces. A bad specifier raises :class:`SpecifierError`, which is both a
ConfigError (a bad argument) and a FormatError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional

from hybridasr.errors import ConfigError, FormatError

READ_OPTIONS = frozenset({"b", "t", "o", "no", "s", "ns", "cs", "ncs", "p", "np", "bg"})
WRITE_OPTIONS = frozenset({"b", "t", "f", "nf", "p"})


class SpecifierError(ConfigError, FormatError):
    """A malformed rspecifier/wspecifier, or one of a kind the caller cannot use."""


@dataclass(frozen=True)
class RSpecifier:
    kind: str  # "ark" or "scp"
    rxfilename: str
    opts: FrozenSet[str] = frozenset()  # the options besides ark/scp, as given


@dataclass(frozen=True)
class WSpecifier:
    ark: str  # the archive wxfilename
    scp: Optional[str]  # the script wxfilename, or None
    text: bool = False  # "t" (Kaldi's default is binary: "b")
    opts: FrozenSet[str] = frozenset()  # the options besides ark/scp, as given


def _split(spec: str, what: str, example: str):
    if ":" not in spec:
        raise SpecifierError(f"bad {what} {spec!r}: expected <options>:<filename>, "
                             f"e.g. {example}")
    head, filename = spec.split(":", 1)
    words = [w for w in head.replace(",", " ").split()]
    if not words or any(not w.strip() for w in head.split(",")):
        raise SpecifierError(f"bad {what} {spec!r}: empty option before ':' (e.g. {example})")
    return words, filename.strip()


def parse_rspecifier(spec: str, plain_ok: bool = False) -> RSpecifier:
    """Parses an rspecifier. ``plain_ok``: a string without ``:`` is a plain filename read as
    an archive (``ark:<spec>``), as our tools have always taken ``text`` or ``utt2spk``."""
    if plain_ok and ":" not in spec:
        if not spec.strip():
            raise SpecifierError("empty rspecifier")
        return RSpecifier("ark", spec.strip())
    words, rx = _split(spec, "rspecifier", "'ark:gunzip -c exp/mono_ali/ali.*.gz|' or "
                                           "scp:data/train/feats.scp")
    kinds = [w for w in words if w in ("ark", "scp")]
    bad = [w for w in words if w not in ("ark", "scp") and w not in READ_OPTIONS]
    if bad:
        raise SpecifierError(f"bad rspecifier {spec!r}: unknown option(s) {','.join(bad)} "
                             f"(expected ark or scp with {','.join(sorted(READ_OPTIONS))})")
    if len(kinds) != 1:
        raise SpecifierError(f"bad rspecifier {spec!r}: expected exactly one of ark, scp "
                             f"(e.g. ark:<rxfilename> or scp:<rxfilename>)")
    if not rx:
        raise SpecifierError(f"bad rspecifier {spec!r}: no filename after ':'")
    return RSpecifier(kinds[0], rx, frozenset(w for w in words if w not in ("ark", "scp")))


def parse_wspecifier(spec: str, plain_ok: bool = False) -> WSpecifier:
    """Parses a wspecifier. ``plain_ok``: a string without ``:`` is a plain filename written
    as an archive (``ark:<spec>``). A bare ``scp:`` (write to the files an existing scp lists)
    is Kaldi's but refused here: nothing of ours writes that way."""
    if plain_ok and ":" not in spec:
        if not spec.strip():
            raise SpecifierError("empty wspecifier")
        return WSpecifier(spec.strip(), None)
    words, wx = _split(spec, "wspecifier", "ark,scp:feats.ark,feats.scp or ark,t:-")
    bad = [w for w in words if w not in ("ark", "scp") and w not in WRITE_OPTIONS]
    if bad:
        raise SpecifierError(f"bad wspecifier {spec!r}: unknown option(s) {','.join(bad)} "
                             f"(expected ark and/or scp with {','.join(sorted(WRITE_OPTIONS))})")
    kinds = [w for w in words if w in ("ark", "scp")]
    if kinds not in (["ark"], ["scp"], ["ark", "scp"]):
        raise SpecifierError(f"bad wspecifier {spec!r}: expected ark, scp or ark,scp (in "
                             f"that order, each once)")
    if not wx:
        raise SpecifierError(f"bad wspecifier {spec!r}: no filename after ':'")
    text = False
    for w in words:  # the last of b/t wins, as in Kaldi
        if w in ("b", "t"):
            text = w == "t"
    opts = frozenset(w for w in words if w not in ("ark", "scp"))
    if kinds == ["scp"]:
        raise SpecifierError(f"wspecifier {spec!r}: writing through an existing scp is not "
                             f"supported; write ark:<file> or ark,scp:<ark>,<scp>")
    if kinds == ["ark"]:
        return WSpecifier(wx, None, text, opts)
    if "," not in wx:
        raise SpecifierError(f"bad wspecifier {spec!r}: ark,scp needs <ark>,<scp> after ':'")
    ark, scp = (s.strip() for s in wx.split(",", 1))
    if not ark or not scp:
        raise SpecifierError(f"bad wspecifier {spec!r}: empty ark or scp filename")
    if ark == "-" or ark.startswith("|"):
        raise SpecifierError(f"bad wspecifier {spec!r}: an scp needs the ark in a file")
    return WSpecifier(ark, scp, text, opts)


def text_table_path(spec: str) -> str:
    """The file of a text table given as ``ark,t:path``, ``ark:path`` (an rspecifier or a
    wspecifier: ``utt2spk``, ``utt2num_frames``...) or a plain ``path``."""
    if ":" not in spec:
        return spec
    try:
        r = parse_rspecifier(spec)
        kind, name = r.kind, r.rxfilename
    except SpecifierError:
        w = parse_wspecifier(spec)
        kind, name = ("scp", w.scp) if w.scp else ("ark", w.ark)
    if kind != "ark":
        raise SpecifierError(f"{spec!r}: expected a text archive, e.g. ark,t:{name}")
    return name


def scp_rxfilename(spec: str) -> str:
    """The scp file of ``scp:wav.scp`` / ``scp,p:feats.scp``, for tools that read only scps."""
    r = parse_rspecifier(spec)
    if r.kind != "scp":
        raise SpecifierError(f"rspecifier {spec!r} is not supported: give scp:<file> "
                             f"(e.g. scp:data/train/wav.scp; with --segments=<file> instead "
                             f"of an extract-segments pipe)")
    return r.rxfilename
