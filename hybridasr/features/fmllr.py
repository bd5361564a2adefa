"""fMLLR features of a speaker-adapted (SAT) Kaldi GMM, as nnet1's ``make_fmllr_feats.sh``.

The GMM system's own feature pipeline, per utterance::

    apply-cmvn $cmvn_opts --utt2spk=ark:utt2spk scp:cmvn.scp scp:feats.scp ark:- |
    splice-feats $splice_opts ark:- ark:- | transform-feats final.mat ark:- ark:- |
    transform-feats --utt2spk=ark:utt2spk "ark:cat trans.*|" ark:- ark:-

(without ``final.mat``: ``add-deltas`` instead of splice + LDA, as the script's "delta" type).
A transform is Kaldi's ``transform-feats`` matrix: square (``y = A x``) or affine
``D x (D+1)`` (``y = A x + b``, the last column ``b``). An utterance whose speaker has no CMVN
stats or no fMLLR transform is skipped with a warning and counted, as ``apply-cmvn`` and
``transform-feats`` do; none written at all is an error.
"""
from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from hybridasr.errors import ConfigError, FormatError, HybridAsrError
from hybridasr.features.cmvn import apply_cmvn, parse_cmvn_opts
from hybridasr.features.context import add_deltas, splice_frames

log = logging.getLogger("hybridasr.features")


def _parse_int_opts(text: str, source: str, tool: str, defaults: dict) -> dict:
    """``--name=value`` / ``--name value`` options of a Kaldi tool, each a number >= 0 with
    the default of ``defaults`` (keys in Python spelling); another option is an error naming
    ``source``."""
    ctx = dict(defaults)
    names = ", ".join("--" + k.replace("_", "-") for k in defaults)
    words = text.split()
    i = 0
    while i < len(words):
        name, sep, value = words[i].partition("=")
        key = name.lstrip("-").replace("-", "_")
        if not words[i].startswith("--") or key not in ctx:
            raise ConfigError(f"{source}: unsupported {tool} option {words[i]!r} "
                              f"(supported: {names})")
        if not sep:
            if i + 1 >= len(words):
                raise ConfigError(f"{source}: {name} needs a value")
            value, i = words[i + 1], i + 1
        try:
            ctx[key] = int(value)
        except ValueError:
            raise ConfigError(f"{source}: {name} needs a number, got {value!r}") from None
        if ctx[key] < 0:
            raise ConfigError(f"{source}: {name} must be >= 0, got {value}")
        i += 1
    return ctx


def parse_splice_opts(text: str, source: str = "splice_opts") -> Tuple[int, int]:
    """(left, right) of Kaldi ``splice-feats`` options (``--left-context``,
    ``--right-context``; Kaldi's defaults 4 and 4). Other options are an error naming
    ``source``."""
    ctx = _parse_int_opts(text, source, "splice-feats", {"left_context": 4, "right_context": 4})
    return ctx["left_context"], ctx["right_context"]


def parse_delta_opts(text: str, source: str = "delta_opts") -> Tuple[int, int]:
    """(order, window) of Kaldi ``add-deltas`` options (``--delta-order``, ``--delta-window``;
    Kaldi's defaults 2 and 2), as ``train_deltas.sh`` records them in ``delta_opts``."""
    ctx = _parse_int_opts(text, source, "add-deltas", {"delta_order": 2, "delta_window": 2})
    if ctx["delta_window"] < 1:
        raise ConfigError(f"{source}: --delta-window must be >= 1")
    return ctx["delta_order"], ctx["delta_window"]


def apply_transform(feats: np.ndarray, mat: np.ndarray, what: str = "transform") -> np.ndarray:
    """Kaldi's ``transform-feats`` on one matrix: ``mat`` square (D' x D) or affine
    (D' x (D+1)); float32."""
    feats = np.asarray(feats, dtype=np.float32)
    mat = np.asarray(mat, dtype=np.float32)
    dim = feats.shape[1]
    if mat.ndim != 2:
        raise FormatError(f"{what} is not a matrix")
    if mat.shape[1] == dim:
        return feats @ mat.T
    if mat.shape[1] == dim + 1:
        return feats @ mat[:, :dim].T + mat[:, dim]
    raise FormatError(f"{what} has {mat.shape[1]} columns; features of dimension {dim} need "
                      f"{dim} (linear) or {dim + 1} (affine)")


def read_text_file(path: str, missing_ok: bool = True) -> str:
    """A small options file (``cmvn_opts``, ``splice_opts``): '' when absent and
    ``missing_ok`` (Kaldi's scripts do ``cat ... 2>/dev/null``)."""
    if not os.path.exists(path) and missing_ok:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None


def read_transforms(rspecifiers: Iterable[str]) -> Dict[str, np.ndarray]:
    """speaker -> matrix of one or more archives (``ark:exp/tri3b/trans.1``, ...); a speaker
    in two archives is an error naming both."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    out: Dict[str, np.ndarray] = {}
    where: Dict[str, str] = {}
    for spec in rspecifiers:
        for key, mat in read_matrices(spec):
            if key in out:
                raise FormatError(f"fMLLR transform of {key} is in both {where[key]} and {spec}")
            out[key], where[key] = np.asarray(mat, dtype=np.float32), spec
    return out


def transform_files(transform_dir: str) -> List[str]:
    """``<dir>/trans.1 .. trans.N`` (numeric order), or [] when the dir has none."""
    if not os.path.isdir(transform_dir):
        return []
    names = [n for n in os.listdir(transform_dir)
             if n.startswith("trans.") and n[len("trans."):].isdigit()]
    return [os.path.join(transform_dir, n) for n in
            sorted(names, key=lambda n: int(n[len("trans."):]))]


def transform_dir_speakers(transform_dir: str) -> List[str]:
    """The speakers of a dir's ``trans.*`` (empty when it has none)."""
    return list(read_transforms(f"ark:{p}" for p in transform_files(transform_dir)))


def choose_transform_dir(speakers: Iterable[str], candidates: Iterable[str]) -> Tuple[Optional[str], List[str]]:
    """The first candidate dir whose ``trans.*`` cover every speaker, and notes on the others
    (why each was not taken); (None, notes) when none does."""
    speakers = list(speakers)
    notes = []
    for d in candidates:
        files = transform_files(d)
        if not files:
            notes.append(f"{d}: no trans.*")
            continue
        have = set(transform_dir_speakers(d))
        missing = [s for s in speakers if s not in have]
        if not missing:
            return d, notes
        notes.append(f"{d}: no transform for {len(missing)} of {len(speakers)} speakers "
                     f"(e.g. {missing[0]})")
    return None, notes


@dataclass
class FmllrPipeline:
    """The GMM's feature pipeline: CMVN (``cmvn_opts``), splice + ``lda`` (final.mat) or
    deltas (``deltas``: order and window, ``delta_opts``), then the speaker's fMLLR transform
    (``transforms``: speaker -> matrix; None: the speaker-independent features,
    make_fmllr_feats.sh without --transform-dir)."""
    cmvn_opts: dict = field(default_factory=lambda: {"norm_means": True, "norm_vars": False})
    splice: Tuple[int, int] = (4, 4)
    lda: Optional[np.ndarray] = None
    transforms: Optional[Dict[str, np.ndarray]] = None
    deltas: Tuple[int, int] = (2, 2)

    @classmethod
    def from_gmm_dir(cls, gmm_dir: str, transform_dir: Optional[str] = None) -> "FmllrPipeline":
        """The pipeline of a Kaldi GMM dir (``cmvn_opts``, ``splice_opts``, ``final.mat``;
        without it ``delta_opts``) and the ``trans.*`` of ``transform_dir`` (an error when it
        has none)."""
        import kaldiio

        cmvn = parse_cmvn_opts(read_text_file(os.path.join(gmm_dir, "cmvn_opts")),
                               source=os.path.join(gmm_dir, "cmvn_opts"))
        splice = parse_splice_opts(read_text_file(os.path.join(gmm_dir, "splice_opts")),
                                   source=os.path.join(gmm_dir, "splice_opts"))
        deltas = parse_delta_opts(read_text_file(os.path.join(gmm_dir, "delta_opts")),
                                  source=os.path.join(gmm_dir, "delta_opts"))
        mat_path = os.path.join(gmm_dir, "final.mat")
        lda = None
        if os.path.exists(mat_path):
            try:
                lda = np.asarray(kaldiio.load_mat(mat_path), dtype=np.float32)
            except Exception as e:  # noqa: BLE001 - kaldiio raises many kinds
                raise FormatError(f"cannot read {mat_path}: {str(e) or type(e).__name__}") from None
        transforms = None
        if transform_dir is not None:
            files = transform_files(transform_dir)
            if not files:
                raise HybridAsrError(f"{transform_dir} has no trans.* (fMLLR transforms)")
            transforms = read_transforms(f"ark:{p}" for p in files)
        return cls(cmvn, splice, lda, transforms, deltas)

    def __call__(self, feats: np.ndarray, cmvn_stats: np.ndarray, spk: str) -> np.ndarray:
        """One utterance's features (KeyError when the speaker has no transform)."""
        x = apply_cmvn(np.asarray(feats, dtype=np.float32), cmvn_stats, **self.cmvn_opts)
        return self.after_cmvn(x, spk)

    def output_dim(self, input_dim: int) -> Optional[int]:
        """The dim of the pipeline's features of ``input_dim``-dim ones (None: ``final.mat``
        does not take them)."""
        try:
            return self.after_cmvn(np.zeros((1, input_dim), np.float32)).shape[1]
        except FormatError:
            return None

    def after_cmvn(self, x: np.ndarray, spk: str = "") -> np.ndarray:
        """The pipeline after its CMVN: splice + LDA or deltas, then the speaker's transform
        (where there are transforms)."""
        if self.lda is not None:
            x = splice_frames(x, *self.splice)
            x = apply_transform(x, self.lda, "final.mat")
        else:
            x = add_deltas(x, *self.deltas)
        if self.transforms is not None:
            x = apply_transform(x, self.transforms[spk], f"the fMLLR transform of {spk}")
        return np.ascontiguousarray(x, dtype=np.float32)


class PipelineFeatures:
    """The pipeline's features of every utterance of ``feats_scp``, in its order, as
    ``(utt, features)``; ``done`` and ``skipped`` count them as they go. Skipped (a warning
    each): no speaker in utt2spk, no CMVN stats or no fMLLR transform for the speaker (as
    Kaldi's apply-cmvn/transform-feats)."""

    def __init__(self, pipeline: FmllrPipeline, feats_scp: str, cmvn_scp: str, utt2spk: str):
        self.pipeline, self.feats_scp, self.cmvn_scp = pipeline, feats_scp, cmvn_scp
        self.utt2spk = utt2spk
        self.done = self.skipped = 0

    def __iter__(self):
        from hybridasr.kaldi.io.matrix_reader import iter_feature_scp
        from hybridasr.kaldi.io.random_access import matrices
        from hybridasr.kaldi.io.table import read_map

        u2s = read_map(self.utt2spk)
        with matrices(self.cmvn_scp) as cmvn:
            for utt, feats in iter_feature_scp(self.feats_scp):
                spk = u2s.get(utt)
                if spk is None:
                    log.warning("%s: no speaker for utterance %s in %s: skipped",
                                self.feats_scp, utt, self.utt2spk)
                elif spk not in cmvn:
                    log.warning("no CMVN stats for speaker %s in %s: utterance %s skipped", spk,
                                self.cmvn_scp, utt)
                elif self.pipeline.transforms is not None and spk not in self.pipeline.transforms:
                    log.warning("no fMLLR transform for speaker %s: utterance %s skipped "
                                "(producing no output for it, as transform-feats)", spk, utt)
                else:
                    self.done += 1
                    yield utt, self.pipeline(feats, cmvn[spk], spk)
                    continue
                self.skipped += 1


def make_fmllr_table(pipeline: FmllrPipeline, feats_scp: str, cmvn_scp: str, utt2spk: str,
                     wspecifier: str) -> Tuple[int, int]:
    """Writes the pipeline's features of every utterance of ``feats_scp`` to ``wspecifier``
    (``PipelineFeatures``); returns (written, skipped). None written is an error."""
    from hybridasr.kaldi.io.table_writer import MatrixWriter

    feats = PipelineFeatures(pipeline, feats_scp, cmvn_scp, utt2spk)
    with MatrixWriter(wspecifier) as writer:
        for utt, x in feats:
            writer.write(utt, x)
        if feats.done == 0:
            raise HybridAsrError(f"no fMLLR features written for {feats_scp}: "
                                 f"{feats.skipped} utterance(s) skipped (see the warnings)")
    log.info("wrote fMLLR features of %d utterances, skipped %d", feats.done, feats.skipped)
    return feats.done, feats.skipped


def describe(pipeline: FmllrPipeline) -> str:
    """One line: the pipeline as Kaldi's commands would spell it (for logs)."""
    opts = " ".join(f"--{k.replace('_', '-')}={'true' if v else 'false'}"
                    for k, v in pipeline.cmvn_opts.items())
    parts = [f"apply-cmvn {opts}"]
    if pipeline.lda is not None:
        l, r = pipeline.splice
        parts += [f"splice-feats --left-context={l} --right-context={r}",
                  f"transform-feats final.mat ({pipeline.lda.shape[0]}x{pipeline.lda.shape[1]})"]
    else:
        parts.append("add-deltas" + ("" if pipeline.deltas == (2, 2) else
                                     " --delta-order=%d --delta-window=%d" % pipeline.deltas))
    if pipeline.transforms is not None:
        parts.append(f"transform-feats --utt2spk trans.* ({len(pipeline.transforms)} speakers)")
    return " | ".join(shlex.quote(p) if "|" in p else p for p in parts)
