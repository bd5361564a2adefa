"""Kaldi formats and conventions (no torch here); the other packages call these for every
Kaldi file they read or write.

- ``io``: table I/O, one import point (specifiers, streams, matrix and int-vector tables,
  text tables, random access over scp files, Kaldi's basic types).
- Kaldi objects: ``hmm_topology``, ``transition_model``, ``tree``, ``gmm_model``, ``fst``,
  ``ilabel_info``, ``lattice``, ``symbol_table``, ``nnet1``,
  ``pdf_mapping`` (per-pdf log-likelihoods through a model's transition-id -> pdf map).
- ``conf``: config files.

Data dirs are ``hybridasr.datadir``; ``run.pl`` and its cluster siblings ``hybridasr.jobs``.
"""
