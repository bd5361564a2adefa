"""Acoustic models of hybrid HMM/NN systems: ``blstm``, ``lstm``, ``mlp``, ``tdnnf``.

Every model maps ``x`` float [B, T, D] (zero padded) and ``lengths`` int64 [B] to logits
[B, T, num_outputs] (pre-softmax): ``model(x, lengths, state=None, return_state=False)``;
with ``return_state`` it returns ``(logits, new_state)`` (None but for ``lstm``, whose state
truncated BPTT carries across windows; ``reset_state`` zeros the rows of a new utterance).

- ``factory``: ``MODELS`` (``--model``), ``model_options`` (every model's declared options),
  ``model_config_from_args``, ``build_model``.
- ``options``: the options the models share (``ModelOptions``, ``LstmOptions``).
- ``io``: ``save_model`` / ``load_model`` (format ``hybridasr-nnet-1``, weights-only loading),
  ``save_ensemble`` (several trained networks in one file).
- ``ensemble``: ``Ensemble``, the average of its members' log-posteriors (``train.sh
  --num-models``; Kaldi's decode_score_fusion.sh).
- ``blstm``, ``lstm``, ``mlp``, ``tdnnf`` (the chain models' TDNN-F): the networks.
"""
from hybridasr.models.factory import (MODEL_CONFIG, MODELS, build_model,  # noqa: F401
                                      model_class, model_config_from_args, model_options,
                                      normalize_config)
from hybridasr.models.io import FORMAT, load_model, save_model  # noqa: F401
from hybridasr.models.lstm import reset_state  # noqa: F401

__all__ = ["MODELS", "MODEL_CONFIG", "model_options", "model_config_from_args", "build_model",
           "model_class", "normalize_config", "save_model", "load_model", "reset_state", "FORMAT"]
