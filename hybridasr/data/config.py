"""``DataConfig``: every feature-transform and batching setting of the data pipeline.

One flat dataclass, so the resolved training config, the model's saved dict and the command
line all hold the same names. ``transform_dict()`` is the part the decoder needs again
(``FeatureTransform.from_dict``); the rest only shapes training batches.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import List, Optional, Tuple

from hybridasr.data.transform import FeatureTransform
from hybridasr.errors import ConfigError

_T = FeatureTransform()


@dataclass
class DataConfig:
    # feature transform (rebuilt at decode time)
    norm_means: bool = _T.norm_means
    norm_vars: bool = _T.norm_vars
    global_norm: bool = _T.global_norm
    delta_order: int = _T.delta_order
    delta_window: int = _T.delta_window
    splice: int = _T.splice
    stack_frames: int = _T.stack_frames
    subsample: int = _T.subsample
    label_delay: int = _T.label_delay
    # batching
    seq_ordering: str = "random"
    bucket_boundaries: str = ""
    bucket_width: int = 0
    bucket_order: str = "random"
    chunking: str = ""
    chunking_loss: str = "all"
    tbptt: str = ""
    max_frames: int = 10000
    max_seqs: int = 0
    max_seq_length: int = 0
    max_seq_length_mode: str = "filter"
    randomizer_size: int = 32768
    min_batches_per_epoch: int = 0
    seed: int = 777
    # loading
    num_workers: int = 2
    prefetch: int = 2

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "DataConfig":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown data config keys: {', '.join(unknown)}")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def transform_dict(self) -> dict:
        """The FeatureTransform settings (global statistics come from ``fit`` later)."""
        names = {f.name for f in fields(FeatureTransform)} & {f.name for f in fields(self)}
        return {k: getattr(self, k) for k in sorted(names)}

    # --- parsed views of the string options -------------------------------------------
    def chunk_size_step(self) -> Optional[Tuple[int, int]]:
        return _parse_pair(self.chunking, "--chunking", "size:step") if self.chunking else None

    def tbptt_streams_window(self) -> Optional[Tuple[int, int]]:
        return _parse_pair(self.tbptt, "--tbptt", "streams:window") if self.tbptt else None

    def boundaries(self) -> List[int]:
        if not self.bucket_boundaries:
            return []
        try:
            b = [int(x) for x in self.bucket_boundaries.replace(":", ",").split(",") if x]
        except ValueError:
            raise ConfigError(f"--bucket-boundaries={self.bucket_boundaries!r}: expected "
                              f"increasing integers, e.g. 200,400,800") from None
        if any(x <= 0 for x in b) or b != sorted(set(b)):
            raise ConfigError(f"--bucket-boundaries={self.bucket_boundaries!r}: expected "
                              f"increasing positive integers")
        return b

    def validate(self) -> None:
        for name in ("delta_order", "splice", "label_delay", "max_frames", "max_seqs",
                     "min_batches_per_epoch",
                     "max_seq_length", "num_workers", "bucket_width"):
            if getattr(self, name) < 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 0")
        for name in ("stack_frames", "subsample", "delta_window", "randomizer_size", "prefetch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1")
        if self.norm_vars and not self.norm_means:
            raise ConfigError("--norm-vars=true needs --norm-means=true (as in Kaldi)")
        if self.max_seq_length_mode not in ("filter", "split"):
            raise ConfigError(f"--max-seq-length-mode must be filter or split, "
                              f"got {self.max_seq_length_mode!r}")
        if self.chunking_loss not in ("all", "once"):
            raise ConfigError(f"--chunking-loss must be all or once, got {self.chunking_loss!r}")
        if self.chunking_loss != "all" and not self.chunking:
            raise ConfigError(f"--chunking-loss={self.chunking_loss} is about overlapping "
                              f"chunks: it needs --chunking=size:step")
        if self.bucket_order not in ("random", "curriculum"):
            raise ConfigError(f"--bucket-order must be random or curriculum, "
                              f"got {self.bucket_order!r}")
        cs = self.chunk_size_step()
        if cs and cs[1] > cs[0]:
            raise ConfigError(f"--chunking={self.chunking}: step > size would skip frames")
        self.tbptt_streams_window()
        self.boundaries()
        if self.tbptt and self.chunking:
            raise ConfigError("--tbptt and --chunking exclude each other")
        if (self.tbptt or self.chunking) and self.seq_ordering == "frame_shuffle":
            raise ConfigError("--seq-ordering=frame_shuffle works on frames; "
                              "drop --tbptt/--chunking")
        from hybridasr.data.batching import make_strategy

        make_strategy(self)  # unknown --seq-ordering names fail here


def _parse_pair(text: str, option: str, form: str) -> Tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise ConfigError(f"{option}={text!r}: expected {form} (two integers)") from None
    if a < 1 or b < 1:
        raise ConfigError(f"{option}={text!r}: both numbers of {form} must be >= 1")
    return a, b
