"""hybridasr: hybrid HMM/neural-network acoustic models for Kaldi setups."""

__version__ = "0.1.0"
