"""Writing matrices to a Kaldi wspecifier: ``ark,scp:a.ark,a.scp`` / ``ark:a.ark`` atomically
(``hybridasr.kaldi.table.ArkScpWriter``), ``ark:-`` to stdout (for piping into Kaldi)."""
from __future__ import annotations

import contextlib

from hybridasr.kaldi.table import ArkScpWriter, parse_wspecifier


class _StdoutArk:
    def __init__(self):
        import kaldiio

        self._helper = kaldiio.WriteHelper("ark:-")

    def write(self, key, array):
        self._helper[key] = array

    def close(self):
        self._helper.close()


@contextlib.contextmanager
def open_matrix_writer(wspecifier: str):
    _, ark, scp = parse_wspecifier(wspecifier)
    if ark == "-":
        w = _StdoutArk()
        try:
            yield w
        finally:
            w.close()
        return
    with ArkScpWriter(ark, scp) as w:
        yield w
