"""The imported training targets: ``targets.scp`` -> pdf-id sequences."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from hybridasr.kaldi.intvec import read_int_vector_scp


def load_targets(scp_path: str) -> "OrderedDict[str, np.ndarray]":
    """utterance -> int32 pdf-ids, in the scp's order (``<import-dir>/targets.scp``); the arks
    it points into are read once each (memory-mapped), whole."""
    return read_int_vector_scp(scp_path)
