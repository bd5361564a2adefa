"""Kaldi formats and conventions (no torch here); the other packages call these for every
Kaldi file they read or write.

- ``specifier``: the one rspecifier/wspecifier parser; ``streams``: rx/wxfilenames (files,
  ``-``, pipes), atomic and durable output files.
- ``table_writer``: the one table-writer family (matrices, int32 vectors, text values);
  ``matrix_reader``, ``intvec``: reading matrix and int32-vector tables; ``matrix_lengths``:
  rows of matrices from their headers (``feat-to-len``); ``table``: text tables (maps, token
  sequences); ``random_access``: values by key over an scp (the dataset's reader), from
  archives kept open per process by ``open_files``; ``pdf_mapping``: per-pdf log-likelihoods
  through a model's transition-id -> pdf map (the decoders' and the aligner's input).
- ``io_funcs``, ``vector_io``, ``hmm_topology``, ``transition_model``, ``gmm_model``,
  ``fst``, ``symbol_table``, ``nnet1``: Kaldi objects (``final.mdl``'s TransitionModel and
  GMMs, ``*.counts`` vectors, ``HCLG.fst``, ``words.txt``, nnet1 models).
- ``conf``: config files; ``datadir*``: data directories (``utils/*``); ``job_runner``,
  ``job_cluster``: ``run.pl`` and its cluster siblings.
"""
