"""Frame-level training targets from Kaldi GMM alignments.

``alignments``: read an alignment dir (``ali.*.gz``, ``num_jobs``) job by job;
``phones``: Kaldi's SplitToPhones (the phones of an alignment and their lengths);
``length_tolerance``: the feature/alignment length check (Kaldi nnet1's
``--length-tolerance``);
``counts``: pdf frame counts and log-priors (Kaldi nnet1's ``PdfPrior``);
``importer``: what ``steps/import_ali.sh`` runs (its ``targets.scp`` is read with
``hybridasr.kaldi.io.intvec.read_int_vector_scp``); ``ali_tools``: Kaldi's ``ali-to-pdf``,
``ali-to-phones``, ``analyze-counts`` and ``show-alignments``.
"""
