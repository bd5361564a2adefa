"""The alignment-import dir (``steps/import_ali.sh <ali-dir> <data-dir> <dir>``): the one owner
of its file names and of reading them back. The importer writes it, training reads the
targets through it and decoding finds the target lengths beside a ``targets.scp``.

Files: ``targets.ark`` / ``targets.scp`` (int32 pdf-id vectors per utterance, sorted),
``target_lengths`` (``utt2num_frames`` format), ``pdf_counts`` (Kaldi text vector, nnet1's
``ali_train_pdf.counts``), ``num_pdfs`` (one integer), copies of ``final.mdl``, ``tree``,
``phones.txt``, and ``import_report.json``."""
from __future__ import annotations

import os
from typing import Optional

from hybridasr.errors import FormatError

__all__ = ["ImportedAlignments", "OUTPUT_FILES", "TARGETS_ARK", "TARGETS_SCP",
           "TARGET_LENGTHS", "PDF_COUNTS", "NUM_PDFS", "REPORT"]

TARGETS_ARK, TARGETS_SCP, TARGET_LENGTHS = "targets.ark", "targets.scp", "target_lengths"
PDF_COUNTS, NUM_PDFS, REPORT = "pdf_counts", "num_pdfs", "import_report.json"
COPIED = ("final.mdl", "tree", "phones.txt")
OUTPUT_FILES = (TARGETS_ARK, TARGETS_SCP, TARGET_LENGTHS, PDF_COUNTS, NUM_PDFS) + COPIED + \
    (REPORT,)

_HOW = "import the alignments with steps/import_ali.sh first"


class ImportedAlignments:
    """An import dir made by ``steps/import_ali.sh``, read lazily (errors name the file)."""

    def __init__(self, path: str):
        self.path = path

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def num_pdfs(self) -> int:
        path = self.file(NUM_PDFS)
        try:
            with open(path, encoding="utf-8") as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            raise FormatError(f"{path}: missing or not a number ({_HOW})") from None

    @property
    def targets_scp(self) -> str:
        path = self.file(TARGETS_SCP)
        if not os.path.exists(path):
            raise FormatError(f"{self.path}: no {TARGETS_SCP} ({_HOW})")
        return path

    @property
    def target_lengths(self) -> Optional[str]:
        """The per-utterance target lengths (None in an import dir made before them)."""
        path = self.file(TARGET_LENGTHS)
        return path if os.path.exists(path) else None

    @property
    def pdf_counts(self) -> str:
        return self.file(PDF_COUNTS)

    @classmethod
    def beside(cls, targets_scp: str) -> "ImportedAlignments":
        """The import dir a ``targets.scp`` belongs to."""
        return cls(os.path.dirname(os.path.abspath(targets_scp)))
