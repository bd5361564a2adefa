"""Frame-level training targets from Kaldi GMM alignments.

``alignments``: read an alignment dir (``ali.*.gz``, ``num_jobs``) job by job;
``phones``: Kaldi's SplitToPhones (phone sequences and per-frame phones);
``length``: the feature/alignment length check (Kaldi nnet1's ``--length-tolerance``);
``counts``: pdf frame counts and log-priors (Kaldi nnet1's ``PdfPrior``);
``targets``: load the imported targets; ``transforms``: label subsampling;
``importer``: what ``steps/import_ali.sh`` runs.
"""
