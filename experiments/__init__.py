"""Experiment suites: real runs of the toolkit whose results are written to ``docs/``.

Run each from the repository root as a module (the toolkit itself comes from the editable
install in ``.venv``; the suites import each other through this package)::

    .venv/bin/python -m experiments.seeds --out docs/results.md
    .venv/bin/python -m experiments.realign_seeds --seeds 1,2,3 --out docs/realign_seeds.md
    .venv/bin/python -m experiments.scale --sizes 1000,10000,100000 --write-doc docs/performance.md

- ``seeds`` (``seeds_prep``, ``seeds_runs``, ``seeds_report``, ``seeds_measure``): the seeds'
  batching, chunking, bucketing, averaging and unrolling experiments on kaldi_polish
  (``docs/results.md``);
- ``realign_seeds``: realignment rounds of the digits recipe over several training seeds
  (``docs/realign_seeds*.md``);
- ``scale`` (``scale_corpus``, ``scale_gpu``, ``scale_report``): every stage's seconds and peak
  memory at growing synthetic LVCSR corpora, and the GPU section (``--stages import,gpu``)
  (``docs/performance.md``);
- ``any_dir`` (``any_dir_shapes``): the default recipe on every real Kaldi dir in ../shared and on
  reshaped copies of them, against each dir's best Kaldi system (``docs/any_dir.md``).

``bench/`` holds the micro-benchmarks (one script each, JSON lines, nothing written to docs/).
``experiments/tests/`` checks the suites themselves (``.venv/bin/python -m pytest -q -n 0
experiments/tests``; the toolkit's tests in ``tests/`` import nothing from here).
"""
