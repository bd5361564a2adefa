"""Lang dirs without Kaldi: dict dir checks, ``utils/prepare_lang.sh`` (phones, words, topology,
``L.fst``/``L_disambig.fst``, ``phones/``), n-gram estimation from text and ARPA to ``G.fst``."""
