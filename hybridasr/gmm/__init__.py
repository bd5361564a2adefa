"""GMM acoustic models trained by the toolkit: a monophone GMM from an equal alignment, as
Kaldi's ``train_mono.sh`` (``train_mono``: the training loop; ``diag_gmm``: diagonal GMMs a
pdf, their statistics, re-estimation, mixing up and Kaldi's ``final.mdl``). The GMM-free path's
aligner that gives pauses to silence (``steps/train_mono.sh``, ``run.sh --flat-objective gmm``)."""
