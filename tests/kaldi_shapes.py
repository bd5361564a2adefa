"""The tests' Kaldi dirs of other shapes: made by ``experiments/kaldi_shapes.py`` (the accuracy
bench cuts the same dirs)."""
from experiments.kaldi_shapes import (digits_dir, make_ali_dir, make_data_dir,  # noqa: F401
                                      polish_dir, real_model, utt_durations, write_wav_copy)
