"""CTC over sentencepiece units: the parts that stand without the trainer.

- ``units``: a sentencepiece model (unigram or BPE) trained on a data dir's transcripts, the
  units dir it is written into (``units.model``, ``units.txt``, ``targets.ark``/``.scp``,
  ``num_outputs``, ``units_report.json``), the words the units cannot spell, ids back to words.
- ``decode``: greedy CTC decoding and prefix beam search over [T, V] log-posteriors.
- ``graph``: the WFST route (EESEN): the token transducer T, the unit lexicon L of a lang dir's
  words, TLG = T o min(det(L o G)), and the identity transition model with which the
  toolkit's mapped decoders (and Kaldi's) search TLG with the network's log-posteriors.

Conventions everywhere: output 0 is the blank (``BLANK``, symbol ``<blk>``); a unit's id is
its sentencepiece id (sentencepiece is trained with its pad piece at id 0, named ``<blk>``,
which it never produces, and ``<unk>`` at id 1), so the network has ``num_outputs`` =
sentencepiece's piece count outputs and no id is shifted between the model, the targets and
``units.txt``. In a graph, input label = unit id + 1 (0 stays epsilon).
"""
BLANK = 0
BLANK_SYMBOL = "<blk>"
