"""Decoding: network outputs -> scaled log-likelihoods -> word sequences -> WER.

``loglikes``: log-posteriors minus log-priors (Kaldi nnet1 ``nnet-forward`` semantics);
``forward``: a trained model over a data dir; ``graph`` / ``decoder``: the embedded WFST
decoder on a Kaldi ``HCLG.fst`` (Kaldi's own ``FasterDecoder`` from the kaldi-decoder
package); ``wer``: ``compute-wer`` with Kaldi's counting and output format; ``gmm``: a Kaldi
GMM model's log-likelihoods (a network-free reference input that reproduces Kaldi's decoding).
"""
