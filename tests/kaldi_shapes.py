"""The tests' Kaldi dirs of other shapes (``hybridasr.recipe.kaldi_dir_shapes``)."""
from hybridasr.recipe.kaldi_dir_shapes import (  # noqa: F401
    real_model,
    read_kv,
    write_kv,
    write_wav_copy,
    make_data_dir,
    make_ali_dir,
    digits_dir,
    polish_dir,
    utt_durations,
)
