"""Audio input, Kaldi-compatible MFCC/fbank, CMVN, deltas and splicing."""
