"""Sentencepiece units for CTC: trained on a Kaldi data dir's ``text``, written as a units dir.

``steps/nnet/train_units.sh <data> <dir>`` (``pybin/train_units.py``) writes into ``<dir>``:

- ``units.model``: the sentencepiece model (unigram, Kudo 2018, BPE, or characters;
  ``--vocab-size``);
- ``units.txt``: the output symbol table, Kaldi style: ``<blk> 0``, ``<unk> 1``, then the
  pieces (``▁`` marks a word's start) with their ids;
- ``targets.ark`` / ``targets.scp``: each utterance's unit ids, binary Kaldi int32 vectors
  (``copy-int-vector``), in the data dir's order;
- ``num_outputs``: one integer, the network's outputs (blank included, = lines of units.txt);
- ``units_report.json``: counts, and the words the units cannot spell with their utterances.

Ids: blank = 0 is reserved by training sentencepiece with ``pad_id=0`` (piece ``<blk>``, a
control piece that encoding never produces and decoding drops) and ``unk_id=1``; so a unit's id
*is* its sentencepiece id, with nothing shifted (no ``+ 1``) between the model, the targets and
the network's output columns. The text is not normalised by sentencepiece
(``normalization_rule_name=identity``): for any word the units can spell, decoding its units
gives the word back exactly. A word they cannot spell (a character the model lacks becomes
``<unk>``) is one whose units decode to something else; such words are counted, logged with
their utterances and listed in the report. With ``character_coverage=1.0`` (the default) every
character of the training text is a piece, so this concerns other text (a test set, a lang
dir's words, or a lower ``--character-coverage``).

With ``--vocab=<lang>/words.txt`` the transcripts are first mapped to the lang dir's spelling by
the toolkit's one rule (``hybridasr.utils.words``): a word outside it is looked up again
lower-cased without leading and trailing punctuation, a token of punctuation only is dropped;
other words stay as they are. So units, targets and the unit lexicon of that lang
(``hybridasr.ctc.graph``) spell the same words the same way.
"""
from __future__ import annotations

import io
import json
import logging
import os
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from hybridasr.ctc import BLANK, BLANK_SYMBOL
from hybridasr.errors import ConfigError, FormatError
from hybridasr.kaldi.io import IntVectorWriter, read_map
from hybridasr.kaldi.io.table import iter_map_lines
from hybridasr.options import option
from hybridasr.utils.atomic import atomic_open
from hybridasr.utils.words import DROP, normalized_word

__all__ = ["UnitOptions", "Units", "UnitsDir", "make_units_dir", "read_transcripts", "train_units",
           "unspellable_words", "write_units_dir", "UNK_ID", "UNK_SYMBOL"]

log = logging.getLogger(__name__)

UNK_ID, UNK_SYMBOL = 1, "<unk>"
MODEL, SYMBOLS, TARGETS_ARK, TARGETS_SCP = "units.model", "units.txt", "targets.ark", "targets.scp"
NUM_OUTPUTS, REPORT = "num_outputs", "units_report.json"
_LISTED = 20  # utterances named per unspellable word (the report and the log)


@dataclass
class UnitOptions:
    """How the units are trained (``train_units.py``; the recipe's values in
    ``conf/ctc/units.conf``)."""
    unit_type: str = option("unigram", "sentencepiece model: unigram (a unigram LM over "
                                       "pieces, Kudo 2018), bpe (byte-pair merges) or char "
                                       "(each character a unit, and the word start: "
                                       "--vocab-size is then only a bound; what a small "
                                       "corpus trains CTC best on)",
                            choices=("unigram", "bpe", "char"))
    vocab_size: int = option(300, "number of units, <blk> and <unk> included (the network's "
                                  "outputs); a text with fewer possible pieces gets fewer",
                             minimum=3)
    character_coverage: float = option(1.0, "share of the text's characters that become "
                                            "pieces, 0.98 to 1 (1: all; rarer ones are "
                                            "<unk>)", minimum=0.98)
    vocab: str = option("", "a words.txt (or word list): transcript words outside it are "
                            "looked up again lower-cased without leading and trailing "
                            "punctuation, punctuation-only tokens are dropped (counted); "
                            "empty: the transcripts as they are")


def _read_vocab(path: str) -> set:
    """The words of a words.txt (first field of each line) or of a word list."""
    return {key for _, key, _ in iter_map_lines(path)}


def read_transcripts(text: str, vocab: str = "") -> Tuple["OrderedDict[str, List[str]]", Dict]:
    """A data dir's ``text`` (utterance id, then words) as {utt: words} in file order, and
    counts. With ``vocab`` (see ``UnitOptions.vocab``) words are normalised to it."""
    table = read_map(text, allow_empty_value=True)
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    stats = {"utterances": len(table), "words": 0, "normalized": 0, "dropped": 0}
    known = _read_vocab(vocab) if vocab else None
    for utt, rest in table.items():
        words = []
        for w in rest.split():
            if known is not None and w not in known:
                norm = normalized_word(w, known)
                if norm == DROP:
                    stats["dropped"] += 1
                    continue
                if norm is not None:
                    stats["normalized"] += 1
                    w = norm
            words.append(w)
        stats["words"] += len(words)
        out[utt] = words
    return out, stats


def train_units(transcripts: Mapping[str, Sequence[str]], opts: UnitOptions = UnitOptions()
                ) -> "Units":
    """Trains sentencepiece on the transcripts (one sentence per utterance, in their order,
    one thread: the same model every run)."""
    import sentencepiece as spm

    sentences = [" ".join(ws) for ws in transcripts.values() if ws]
    if not sentences:
        raise FormatError("no words to train units on (every transcript is empty)")
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=buf, model_type=opts.unit_type,
            vocab_size=opts.vocab_size, character_coverage=opts.character_coverage,
            pad_id=BLANK, pad_piece=BLANK_SYMBOL, unk_id=UNK_ID, unk_piece=UNK_SYMBOL,
            unk_surface=UNK_SYMBOL, bos_id=-1, eos_id=-1, normalization_rule_name="identity",
            hard_vocab_limit=False, num_threads=1, input_sentence_size=0,
            max_sentence_length=1 << 20, minloglevel=2)
    except RuntimeError as e:
        chars = len({c for x in sentences for c in x if not c.isspace()})
        hint = (f" (the text has {chars} characters, each a unit with "
                f"--character-coverage=1: at least {chars + 3} units)"
                if "required_chars" in str(e) else "")
        raise ConfigError(f"sentencepiece could not train {opts.unit_type} units with "
                          f"--vocab-size={opts.vocab_size}{hint}: {e}") from None
    return Units(buf.getvalue())


class Units:
    """A trained unit set: words <-> unit ids (blank 0 never among them)."""

    def __init__(self, model_proto: bytes, name: str = "<units>"):
        import sentencepiece as spm

        self.proto, self.name = model_proto, name
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        if self.sp.pad_id() != BLANK or self.sp.id_to_piece(BLANK) != BLANK_SYMBOL:
            raise FormatError(f"{name}: not a units model of this toolkit (id 0 is "
                              f"{self.sp.id_to_piece(0)!r}, expected {BLANK_SYMBOL})")
        self.unk_id = self.sp.unk_id()

    @classmethod
    def load(cls, path: str) -> "Units":
        try:
            with open(path, "rb") as f:
                return cls(f.read(), path)
        except OSError as e:
            raise FormatError(f"cannot read units model {path}: {e.strerror}") from None

    @property
    def num_outputs(self) -> int:
        """Units including the blank: the network's output dim and ``units.txt``'s lines."""
        return self.sp.get_piece_size()

    def symbols(self) -> List[str]:
        return [self.sp.id_to_piece(i) for i in range(self.num_outputs)]

    def encode(self, words: Sequence[str]) -> List[int]:
        """Unit ids of a word sequence (an utterance)."""
        return self.sp.encode(" ".join(words)) if words else []

    def encode_word(self, word: str) -> List[int]:
        return self.sp.encode(word)

    def decode(self, ids: Sequence[int]) -> List[str]:
        """Words of a unit-id sequence (blanks dropped; ``<unk>`` where a unit was one)."""
        ids = [int(i) for i in ids if int(i) != BLANK]
        return self.sp.decode(ids).split() if ids else []

    def can_spell(self, word: str) -> bool:
        """Whether the word's units decode to the word itself (no ``<unk>``)."""
        ids = self.sp.encode(word)
        return self.unk_id not in ids and self.sp.decode(ids) == word


def _distinct(items: Sequence[str]) -> List[str]:
    return list(dict.fromkeys(items))


def unspellable_words(units: Units, transcripts: Mapping[str, Sequence[str]]
                      ) -> "OrderedDict[str, List[str]]":
    """{word: the utterance of each of its tokens} for the words the units cannot spell, in
    first-seen order."""
    seen: Dict[str, bool] = {}
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for utt, words in transcripts.items():
        for w in words:
            if w not in seen:
                seen[w] = units.can_spell(w)
            if not seen[w]:
                out.setdefault(w, []).append(utt)
    return out


def write_units_dir(out_dir: str, units: Units, transcripts: Mapping[str, Sequence[str]],
                    info: Optional[Dict] = None, write_model: bool = True) -> Dict:
    """Writes the units dir (see the module docstring); returns the report."""
    os.makedirs(out_dir, exist_ok=True)
    if write_model:
        with atomic_open(os.path.join(out_dir, MODEL), "wb") as f:
            f.write(units.proto)
        with atomic_open(os.path.join(out_dir, SYMBOLS), encoding="utf-8") as f:
            f.write("".join(f"{s} {i}\n" for i, s in enumerate(units.symbols())))
    with atomic_open(os.path.join(out_dir, NUM_OUTPUTS)) as f:  # also beside other targets
        f.write(f"{units.num_outputs}\n")
    ark, scp = os.path.join(out_dir, TARGETS_ARK), os.path.join(out_dir, TARGETS_SCP)
    total_units = total_words = with_unk = empty = 0
    with IntVectorWriter(f"ark,scp:{ark},{scp}") as w:
        for utt, words in transcripts.items():
            ids = units.encode(words)
            w.write(utt, ids)
            total_units += len(ids)
            total_words += len(words)
            with_unk += units.unk_id in ids
            empty += not ids
    bad = unspellable_words(units, transcripts)
    report = dict(info or {})
    report.update({
        "num_outputs": units.num_outputs, "blank": BLANK, "unk": units.unk_id,
        "utterances": len(transcripts), "empty_utterances": empty, "words": total_words,
        "units": total_units, "units_per_word": round(total_units / max(total_words, 1), 3),
        "utterances_with_unk": with_unk, "unspellable_words": len(bad),
        "unspellable_tokens": sum(len(v) for v in bad.values()),
        "unspellable": {w: {"count": len(u), "utterances": _distinct(u)[:_LISTED]}
                        for w, u in bad.items()},
    })
    for word, utts in bad.items():
        named = _distinct(utts)
        log.warning("the units cannot spell %r (%d times, in %s%s)", word, len(utts),
                    " ".join(named[:_LISTED]), " ..." if len(named) > _LISTED else "")
    if bad:
        log.warning("%d words (%d tokens, in %d utterances) cannot be spelled with the units: "
                    "their targets hold <unk> (id %d)", len(bad), report["unspellable_tokens"],
                    with_unk, units.unk_id)
    with atomic_open(os.path.join(out_dir, REPORT), encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return report


def make_units_dir(text: str, out_dir: str, opts: UnitOptions = UnitOptions(),
                   model_in: str = "") -> Dict:
    """``train_units.py``: trains units on ``text`` (or reads ``model_in``) and writes the
    units dir. With ``model_in`` only the targets, ``num_outputs`` and the report are written
    (e.g. the cross-validation set's targets with the training set's units: a units dir that
    ``train.py --objective=ctc`` takes as ``<ali-cv>``)."""
    transcripts, counts = read_transcripts(text, opts.vocab)
    if model_in:
        units = Units.load(model_in)
    else:
        units = train_units(transcripts, opts)
    info = {"text": text, "model": model_in or os.path.join(out_dir, MODEL),
            "options": asdict(opts), "transcripts": counts}
    report = write_units_dir(out_dir, units, transcripts, info, write_model=not model_in)
    log.info("%d %s units (blank 0 included); %d utterances, %d words -> %d units (%.2f a "
             "word); %d words normalised to --vocab, %d punctuation tokens dropped; %d words "
             "cannot be spelled", units.num_outputs, opts.unit_type, report["utterances"],
             report["words"], report["units"], report["units_per_word"],
             counts["normalized"], counts["dropped"], report["unspellable_words"])
    return report


class UnitsDir:
    """A units dir made by ``steps/nnet/train_units.sh``: what training and decoding read."""

    def __init__(self, path: str):
        self.path = path

    def file(self, name: str) -> str:
        p = os.path.join(self.path, name)
        if not os.path.exists(p):
            raise FormatError(f"{self.path}: no {name} (make it with steps/nnet/train_units.sh)")
        return p

    @property
    def num_outputs(self) -> int:
        path = self.file(NUM_OUTPUTS)
        try:
            with open(path, encoding="utf-8") as f:
                return int(f.read().split()[0])
        except (ValueError, IndexError):
            raise FormatError(f"{path}: expected one integer") from None

    @property
    def blank(self) -> int:
        return BLANK

    @property
    def targets_scp(self) -> str:
        return self.file(TARGETS_SCP)

    @property
    def symbols_path(self) -> str:
        return self.file(SYMBOLS)

    def units(self) -> Units:
        return Units.load(self.file(MODEL))

    def targets(self) -> "OrderedDict":
        """{utt: int32 unit ids}, all of them (random access: ``kaldi.io.random_access.
        int_vectors(self.targets_scp)``)."""
        from hybridasr.kaldi.io import read_int_vector_scp

        return read_int_vector_scp(self.targets_scp)
