"""Kaldi data directories (``wav.scp``, ``segments``, ``utt2spk``, ``spk2utt``, ``text``,
``feats.scp``, ...) as Kaldi's ``utils/`` scripts handle them:

- ``files``: the files of a data dir, reading and writing its tables, sortedness;
- ``validate``: ``utils/validate_data_dir.sh``; ``fix``: ``utils/fix_data_dir.sh``;
- ``split``: ``utils/split_data.sh``; ``subset``: ``utils/subset_data_dir.sh``;
- ``tr_cv``: ``utils/subset_data_dir_tr_cv.sh`` (nnet1's held-out speakers or utterances).
"""
