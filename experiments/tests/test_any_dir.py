"""experiments/any_dir.py's pieces on the real Kaldi dirs in ../shared (the recipe is not run:
too slow): the reshaped copies (built in tmp_path) carry their shapes and leave the rest
linked to the real files, the best Kaldi system is read from the dirs' own wer_* files, and a
failing run's report shows its log's last error line."""
from __future__ import annotations

import gzip
import wave
from pathlib import Path

import pytest

from experiments import any_dir
from experiments import any_dir_shapes as shapes
from hybridasr.align.alignments import iter_alignment_dir



@pytest.fixture(scope="module")
def data(shared_dir) -> Path:
    return shared_dir / "data"


def _table(path: Path) -> dict:
    return dict(ln.split(" ", 1) for ln in path.read_text().splitlines() if ln.strip())


def _wav_header(path: Path):
    with wave.open(str(path)) as w:
        return w.getframerate(), w.getnchannels()


def test_best_kaldi_system_digits_and_hindi_sat(data):
    assert shapes.best_kaldi_system(data / "kaldi_digits")[:2] == (0.0, "mono")
    wer, system, line = shapes.best_kaldi_system(data / "kaldi_hindi_sat")
    # tri3b's fMLLR decode beats its speaker-independent pass (decode.si 30.00) and tri2a 28.33
    assert (wer, system) == (18.33, "tri3b")
    assert line.startswith("%WER 18.33 [ 11 / 60")
    assert shapes.best_kaldi_system(data / "kaldi_tiny_1spk")[:2] == (23.33, "mono")


def test_no_rate_copy(tmp_path, data):
    src = data / "kaldi_digits"
    dst = shapes.no_rate_copy(src, tmp_path / "k")
    conf = (dst / "conf" / "mfcc.conf").read_text()
    assert "sample" not in conf and "--use-energy=false" in conf
    assert "--sample_frequency=8000" in (src / "conf" / "mfcc.conf").read_text()
    # the rest is the real dir: the alignments and audio resolve to ../shared
    assert (dst / "exp" / "mono_ali").is_symlink() and (dst / "exp/mono_ali/ali.1.gz").exists()
    assert (dst / "exp" / "mono" / "final.mdl").is_symlink()
    wav = _table(dst / "data" / "train" / "wav.scp")
    assert len(wav) == 120 and all((dst / p).exists() for p in wav.values())


def test_44k_copy_headers_and_confs(tmp_path, data):
    src = data / "kaldi_tiny_1spk"
    dst = shapes.resampled_copy(src, tmp_path / "k")
    for s in ("train", "test"):
        wav = _table(dst / "data" / s / "wav.scp")
        assert len(wav) == 10
        assert {_wav_header(dst / p) for p in wav.values()} == {(44100, 1)}
        assert not (dst / "data" / s).is_symlink() and not (dst / "data" / s / "feats.scp").exists()
        assert _table(dst / "data" / s / "text") == _table(src / "data" / s / "text")
    assert (dst / "conf" / "mfcc.conf").read_text().splitlines() == \
        ["--use-energy=false", "--sample-frequency=44100"]
    assert "--sample-frequency=16000" in (dst / "conf" / "fbank.conf").read_text()
    # durations kept (the GMM's 10 ms frames still fit): 44.1k samples over 16k samples
    u, p = sorted(_table(dst / "data" / "train" / "wav.scp").items())[0]
    with wave.open(str(dst / p)) as a, \
            wave.open(str(src / _table(src / "data" / "train" / "wav.scp")[u])) as b:
        assert abs(a.getnframes() / 44100 - b.getnframes() / b.getframerate()) < 0.01


def test_replicated_copy_has_1000_utts_each_aligned(tmp_path, data):
    src = data / "kaldi_digits"
    dst = shapes.replicated_copy(src, tmp_path / "k", copies=10)
    d = dst / "data" / "train"
    wav, text, u2s = (_table(d / n) for n in ("wav.scp", "text", "utt2spk"))
    assert len(wav) == 1200 and set(wav) == set(text) == set(u2s)
    assert all(u.startswith(s + "_") for u, s in u2s.items())  # speaker a prefix
    spk2utt = _table(d / "spk2utt")
    assert len(spk2utt) == 120 and sum(len(v.split()) for v in spk2utt.values()) == 1200
    alis = {u: a for _, u, a in iter_alignment_dir(str(dst / "exp" / "mono_ali"))}
    assert set(alis) == set(wav)
    real = {u: a for _, u, a in iter_alignment_dir(str(src / "exp" / "mono_ali"))}
    assert (alis["r07-theo_0_3"] == real["theo_0_3"]).all()
    assert text["r07-theo_0_3"] == _table(src / "data" / "train" / "text")["theo_0_3"]
    with gzip.open(dst / "exp" / "mono_ali" / "ali.1.gz") as f:  # text, as the real one
        assert f.readline().split()[1].isdigit()
    assert (dst / "exp" / "mono_ali" / "final.mdl").stat().st_size > 1000


def test_mixed_copy_rates_and_channels(tmp_path, data):
    src = data / "kaldi_digits"
    dst = shapes.mixed_copy(src, tmp_path / "k")
    wav = _table(dst / "data" / "train" / "wav.scp")
    heads = [_wav_header(dst / wav[u]) for u in sorted(wav)]
    assert set(heads) == {(8000, 1), (16000, 1), (8000, 2), (16000, 2)}
    assert heads.count((16000, 2)) == 30
    assert _table(dst / "data" / "test" / "utt2spk") == _table(src / "data" / "test" / "utt2spk")
    assert "--sample_frequency=8000" in (dst / "conf" / "mfcc.conf").read_text()


def test_dict_only_copy(tmp_path, data):
    src = data / "kaldi_digits"
    dst = shapes.dict_only_copy(src, tmp_path / "k")
    assert not (dst / "data" / "lang").exists() and (src / "data" / "lang").exists()
    assert (dst / "data" / "local" / "dict" / "lexicon.txt").exists()
    assert (dst / "exp" / "mono" / "graph" / "HCLG.fst").exists()


def test_a_failing_case_is_reported(tmp_path, monkeypatch, data):
    """A case whose recipe fails is a row with its log's last error line, not an exception."""
    log = tmp_path / "x.log"
    log.write_text("stage 1\nrun.sh: error: utterance u1 has 2 channels\nlater noise\n")
    assert any_dir.last_error_line(log) == "run.sh: error: utterance u1 has 2 channels"
    monkeypatch.setitem(any_dir.CASES, "broken", dict(
        src="kaldi_digits", build=shapes.no_rate_copy, shape="broken",
        args=["--ali", "exp/no_such_ali", "--graph", "exp/mono/graph", "--stop-stage", "0"]))
    r = any_dir.run_case("broken", tmp_path / "w", keep=False)
    # the checker's error with the line that goes on with it, not run.sh's "stage 0 failed"
    assert r["rc"] != 0 and r["error"].startswith("20") and "ERROR check_kaldi_dir.py" in r["error"]
    assert "missing alignment model" in r["error"] and "no_such_ali/final.mdl" in r["error"]
    assert (r["kaldi_wer"], r["kaldi_system"]) == (0.0, "mono")
    assert not (tmp_path / "w" / "broken").exists() and (tmp_path / "w" / "broken.log").exists()
    page = any_dir.table([r], "python -m experiments.any_dir --cases broken").splitlines()
    row = page[page.index("| --- | --- | --- | --- | --- | --- | --- |") + 1]
    assert page[-1].startswith("Not in this run: digits (real kaldi_digits")
    assert row.startswith("| broken | broken | rc ") and "| mono 0.00 | - |" in row
    # --table-only tabulates the results left in the work dir, running nothing
    doc = tmp_path / "any_dir.md"
    assert any_dir.main(["--cases", "broken,digits", "--work-dir", str(tmp_path / "w"),
                         "--table-only", "--out", str(doc)]) == 0
    lines = doc.read_text().splitlines()
    assert "--table-only" in lines[2] and row in lines and "| digits |" not in doc.read_text()


@pytest.mark.parametrize("flattened", [True, False])
def test_linked_copy_has_final_mdl_a_symlink(tmp_path, data, flattened):
    """Whether ../shared holds final.mdl as Kaldi left it (a symlink) or flattened (a file
    naming 35.mdl), the copy the recipe reads has it a symlink to the real model."""
    src = tmp_path / "src"
    (src / "exp" / "tri1").mkdir(parents=True)
    real = data / "kaldi_tiny_2spk" / "exp" / "tri1"
    (src / "exp" / "tri1" / "35.mdl").write_bytes((real / "35.mdl").read_bytes())
    if flattened:
        (src / "exp" / "tri1" / "final.mdl").write_text("35.mdl")
    else:
        (src / "exp" / "tri1" / "final.mdl").symlink_to("35.mdl")
    (src / "exp" / "tri1" / "num_jobs").write_text("1\n")
    dst = shapes.linked_copy(src, tmp_path / "dst")
    final = dst / "exp" / "tri1" / "final.mdl"
    assert final.is_symlink() and final.read_bytes() == (real / "35.mdl").read_bytes()
    assert (dst / "exp" / "tri1" / "num_jobs").resolve() == src / "exp" / "tri1" / "num_jobs"
    assert shapes.flattened_links(src) == ({"exp/tri1/final.mdl": "35.mdl"} if flattened else {})
    # the real dir: its tri1 model (final.mdl flattened in this copy of ../shared or not)
    whole = shapes.linked_copy(data / "kaldi_tiny_2spk", tmp_path / "whole")
    assert (whole / "exp" / "tri1" / "final.mdl").stat().st_size > 1000


def test_chain_wer_column(tmp_path):
    """--run-opts '--chain true': the chain model's summary.json WER gets its own column and
    verdict against the dir's best Kaldi system."""
    import json
    s5 = tmp_path / "s5"
    for d, wer in (("blstm", 3.33), ("chain/tdnn", 1.67)):
        (s5 / "exp" / d).mkdir(parents=True)
        (s5 / "exp" / d / "summary.json").write_text(json.dumps({"wer": wer}))
    w = any_dir.recipe_wer(s5)
    assert w["wer"] == 3.33 and w["chain_wer"] == 1.67
    r = dict(case="c", shape="s", rc=0, error=None, minutes=1.0, kaldi_wer=3.33,
             kaldi_system="mono", command="./run.sh --chain true", **w)
    page = any_dir.table([r], "x").splitlines()
    assert "| chain WER | chain beat it? |" in page[6]
    row = [ln for ln in page if ln.startswith("| c |")][0]
    assert "| 3.33 | mono 3.33 | tie | 1.67 | yes | 1.0 |" in row
    assert any_dir.runs_chain("--chain=true") and any_dir.runs_chain("--nj 1 --chain true")
    assert not any_dir.runs_chain("--chain false --chain-opts '--num-leaves 50'")
    plain = {k: v for k, v in r.items() if k != "chain_wer"}
    assert "chain" not in any_dir.table([dict(plain, command="./run.sh")], "x").splitlines()[6]


def test_yesno_dir_is_kaldis_yesno_data(tmp_path, data):
    """The yesno case's dir: egs/yesno/s5's data dirs (30 + 30 of the sorted wavs, one speaker,
    the words from the file name), dict dir and unigram LM; the published Kaldi figure."""
    d = shapes.yesno_dir(data / "waves_yesno", tmp_path / "yesno")
    train = shapes.read_kv(d / "data/train_yesno/text")
    test = shapes.read_kv(d / "data/test_yesno/text")
    assert len(train) == len(test) == 30 and max(train) < min(test)
    assert train["0_0_0_0_1_1_1_1"] == "NO NO NO NO YES YES YES YES"
    assert set(shapes.read_kv(d / "data/test_yesno/utt2spk").values()) == {"global"}
    assert (d / "data/test_yesno/spk2utt").read_text().count("\n") == 1
    wav = shapes.read_kv(d / "data/test_yesno/wav.scp")[min(test)]
    assert Path(wav).is_absolute() and Path(wav).exists()
    assert shapes.read_kv(d / "data/local/dict/lexicon.txt") == {
        "<SIL>": "SIL", "YES": "Y", "NO": "N"}
    assert "ngram 1=4" in (d / "data/local/lm_tg.arpa").read_text()
    assert "--sample-frequency=8000" in (d / "conf/mfcc.conf").read_text()
    assert any_dir.CASES["yesno"]["published"][0] == 0.0 and "yesno" in any_dir.FAST
