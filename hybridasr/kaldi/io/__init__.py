"""Kaldi's table I/O, one import point (as kaldiio): specifiers, streams, readers and writers.

- ``specifier``: the one rspecifier/wspecifier parser; ``streams``: rx/wxfilenames (files,
  ``-``, pipes), atomic and durable output files.
- ``table_writer``: the one table-writer family (matrices, int32 vectors, text values);
  ``matrix_reader``, ``intvec``: reading matrix and int32-vector tables; ``matrix_lengths``:
  rows of matrices from their headers (``feat-to-len``); ``table``: text tables (maps, token
  sequences); ``random_access``: values by key over an scp, from archives kept open per
  process by ``open_files``; ``vector_io``: Kaldi vectors (``*.counts``); ``io_funcs``: Kaldi's
  basic types in objects (``KaldiObjectReader``/``Writer``).

The names most callers need are imported here: ``from hybridasr.kaldi.io import ...``.
"""
from hybridasr.kaldi.io.intvec import read_int_vector_scp  # noqa: F401
from hybridasr.kaldi.io.matrix_lengths import read_scp_lengths  # noqa: F401
from hybridasr.kaldi.io.specifier import parse_rspecifier, parse_wspecifier  # noqa: F401
from hybridasr.kaldi.io.table import read_map, read_text_archive, write_map  # noqa: F401
from hybridasr.kaldi.io.table_writer import (ArkScpWriter, IntVectorWriter,  # noqa: F401
                                             MatrixWriter, TextTableWriter)
