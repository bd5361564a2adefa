"""CTC units (hybridasr.ctc.units, train_units.py, steps/nnet/train_units.sh) on the real
transcripts of ../shared: the targets table round-trips to the words, blank 0 is reserved,
units.txt is the output symbol table, and the words the units cannot spell are named."""
from __future__ import annotations

import json
import logging
import subprocess

import numpy as np
import pytest

from hybridasr.ctc import BLANK
from hybridasr.ctc.units import (UNK_ID, UnitOptions, Units, UnitsDir, make_units_dir,
                                 read_transcripts, train_units, unspellable_words)
from hybridasr.kaldi.io import read_int_vector_scp
from train_helpers import load_pybin


def _check_units_dir(d, transcripts):
    """units.txt, num_outputs and the targets agree; the targets decode to the words."""
    ud = UnitsDir(str(d))
    units = ud.units()
    lines = (d / "units.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "<blk> 0" and lines[1] == "<unk> 1"
    assert [int(x.split()[1]) for x in lines] == list(range(len(lines)))
    assert ud.num_outputs == len(lines) == units.num_outputs
    assert [x.split()[0] for x in lines] == units.symbols()
    targets = read_int_vector_scp(ud.targets_scp)
    assert list(targets) == list(transcripts)  # every utterance, in the data dir's order
    for utt, words in transcripts.items():
        ids = targets[utt]
        assert ids.dtype == np.int32 and len(ids) >= len(words)
        assert BLANK not in ids and UNK_ID not in ids and ids.max() < ud.num_outputs
        assert units.decode(ids) == words, utt
    return ud, targets


def test_digits_targets_round_trip_to_the_words(tmp_path, kaldi_digits):
    text = kaldi_digits / "data/train/text"
    report = make_units_dir(str(text), str(tmp_path / "units"))
    transcripts, counts = read_transcripts(str(text))
    assert counts == {"utterances": 120, "words": 120, "normalized": 0, "dropped": 0}
    ud, targets = _check_units_dir(tmp_path / "units", transcripts)
    # 300 asked for; digits' ten words have only so many pieces (the vocabulary is a bound)
    assert 10 < ud.num_outputs < 300 and report["num_outputs"] == ud.num_outputs
    assert report["unspellable_words"] == 0 and report["utterances"] == 120
    assert report["units"] == sum(len(v) for v in targets.values())
    # the same model on every run (one thread, no sampling)
    again = train_units(transcripts)
    assert again.proto == (tmp_path / "units/units.model").read_bytes()
    # one word's units: a word-start piece first, none after it
    units = ud.units()
    for w in "zero one seven".split():
        pieces = [units.sp.id_to_piece(i) for i in units.encode_word(w)]
        assert pieces[0].startswith("\u2581") and not any(p.startswith("\u2581")
                                                          for p in pieces[1:])
        assert units.decode(units.encode_word(w)) == [w]


def test_polish_with_the_lang_vocabulary_and_bpe(tmp_path, kaldi_polish):
    text = str(kaldi_polish / "data/train/text")
    words_txt = str(kaldi_polish / "data/lang/words.txt")
    opts = UnitOptions(unit_type="bpe", vocab_size=200, vocab=words_txt)
    report = make_units_dir(text, str(tmp_path / "bpe"), opts)
    transcripts, counts = read_transcripts(text, words_txt)
    # the authors' spelling mapped to the lexicon's: capitals, glued punctuation, "," tokens
    assert counts["normalized"] > 1000 and counts["dropped"] > 50
    raw, _ = read_transcripts(text)
    assert "," in {w for ws in raw.values() for w in ws}
    assert "," not in {w for ws in transcripts.values() for w in ws}
    ud, _ = _check_units_dir(tmp_path / "bpe", transcripts)
    assert ud.num_outputs == 200 and report["unspellable_words"] == 0
    assert report["options"]["unit_type"] == "bpe"
    assert 2.0 < report["units_per_word"] < 6.0


def test_words_the_units_cannot_spell_are_named(tmp_path, kaldi_digits, kaldi_polish, caplog):
    """Digits' units (a few letters) encode the Polish test sentences: every word with
    another letter is counted and named with its utterances, and its units hold <unk>."""
    make_units_dir(str(kaldi_digits / "data/train/text"), str(tmp_path / "digits"))
    model = str(tmp_path / "digits/units.model")
    polish = str(kaldi_polish / "data/test/text")
    with caplog.at_level(logging.WARNING):
        report = load_pybin("train_units").main([f"--model-in={model}", str(kaldi_polish /
                                                 "data/test"), str(tmp_path / "pl")])
    assert report == 0
    rep = json.loads((tmp_path / "pl/units_report.json").read_text(encoding="utf-8"))
    transcripts, _ = read_transcripts(polish)
    units = Units.load(model)
    bad = {w for ws in transcripts.values() for w in ws if not units.can_spell(w)}
    assert bad and set(rep["unspellable"]) == bad and rep["unspellable_words"] == len(bad)
    assert rep["unspellable_tokens"] == sum(w in bad for ws in transcripts.values() for w in ws)
    word = sorted(bad)[0]
    utts = [u for u, ws in transcripts.items() if word in ws]
    assert rep["unspellable"][word] == {
        "count": sum(ws.count(word) for ws in transcripts.values()), "utterances": utts[:20]}
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert repr(word) in logged and utts[0] in logged
    targets = read_int_vector_scp(str(tmp_path / "pl/targets.scp"))
    assert all((UNK_ID in targets[u]) == any(w in bad for w in ws)
               for u, ws in transcripts.items())
    assert rep["utterances_with_unk"] == sum(any(w in bad for w in ws)
                                             for ws in transcripts.values())
    assert not (tmp_path / "pl/units.model").exists()  # --model-in: targets and report only
    # a coverage below 1 leaves rare characters out of the units: those words are named too
    train, _ = read_transcripts(str(kaldi_polish / "data/train/text"))
    few = train_units(train, UnitOptions(character_coverage=0.99))
    chars = set("".join(few.symbols()[2:]))
    bad = unspellable_words(few, train)
    assert "Łaby" in bad and "Ł" not in chars
    assert set(bad) == {w for ws in train.values() for w in ws if set(w) - chars}
    assert all(UNK_ID in few.encode_word(w) for w in bad)


def test_the_step_script_and_the_conf_file(tmp_path, kaldi_digits, repo_dir, env_with_path):
    conf = (repo_dir / "conf/ctc/units.conf").read_text()
    assert "--unit-type=unigram" in conf and "--vocab-size=" in conf
    out = tmp_path / "exp/units"
    p = subprocess.run(["bash", str(repo_dir / "steps/nnet/train_units.sh"), "--unit-type",
                        "bpe", "--lang", str(kaldi_digits / "data/lang"),
                        str(kaldi_digits / "data/train"), str(out)],
                       cwd=tmp_path, env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "words the units cannot spell" in p.stdout
    rep = json.loads((out / "units_report.json").read_text())
    assert rep["options"]["unit_type"] == "bpe"  # the command line over the conf file
    assert rep["options"]["vocab_size"] == int(conf.split("--vocab-size=")[1].split()[0])
    assert rep["options"]["vocab"].endswith("data/lang/words.txt")
    assert (out / "log/train_units.log").is_file()
    transcripts, _ = read_transcripts(str(kaldi_digits / "data/train/text"))
    _check_units_dir(out, transcripts)
    # usage and input checks
    p = subprocess.run(["bash", str(repo_dir / "steps/nnet/train_units.sh"), str(tmp_path)],
                       cwd=tmp_path, env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 1 and "e.g.:" in p.stderr
    p = subprocess.run(["bash", str(repo_dir / "steps/nnet/train_units.sh"), str(tmp_path),
                        str(out)], cwd=tmp_path, env=env_with_path, capture_output=True,
                       text=True)
    assert p.returncode == 1 and "missing file" in p.stderr and "text" in p.stderr


def test_options(tmp_path, kaldi_digits):
    from hybridasr.errors import ConfigError
    from hybridasr.options import from_values

    p = load_pybin("train_units").get_parser()
    conf = tmp_path / "u.conf"
    conf.write_text("--unit-type=bpe\n--vocab-size=50\n")
    args = p.parse_args([f"--config={conf}", "--vocab-size=60", "data", "dir"])
    assert from_values(UnitOptions, args) == UnitOptions(unit_type="bpe", vocab_size=60)
    with pytest.raises(ConfigError, match="--unit-type"):
        from_values(UnitOptions, {"unit_type": "word"})
    # characters: every character of the text a unit, the word start one too
    text = kaldi_digits / "data/train/text"
    report = make_units_dir(str(text), str(tmp_path / "chars"), UnitOptions(unit_type="char"))
    units = UnitsDir(str(tmp_path / "chars")).units()
    chars = {c for line in open(text) for c in line.split(" ", 1)[1] if not c.isspace()}
    assert report["num_outputs"] == len(chars) + 3 == 18  # <blk>, <unk>, the word start
    assert set(units.symbols()[3:]) == chars and report["unspellable_words"] == 0
    with pytest.raises(ConfigError, match="--vocab-size"):
        from_values(UnitOptions, {"vocab_size": 2})
    with pytest.raises(ConfigError, match="--character-coverage"):
        from_values(UnitOptions, {"character_coverage": 0.5})
    # fewer units than characters: the error says how many are needed (15 letters + 3)
    digits, _ = read_transcripts(str(kaldi_digits / "data/train/text"))
    with pytest.raises(ConfigError, match="--vocab-size=10 .*at least 18 units"):
        train_units(digits, UnitOptions(vocab_size=10))
    assert train_units(digits, UnitOptions(vocab_size=18)).num_outputs == 18
