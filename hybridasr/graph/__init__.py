"""Decoding graphs without Kaldi: the H transducer from a tree and a TransitionModel, HMM
self-loops, and ``utils/mkgraph.sh`` (HCLG) on kaldifst."""
