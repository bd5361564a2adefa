"""CTC training (--objective=ctc, hybridasr.train.ctc) on kaldi_digits' real features and
transcripts: the CV loss goes down, utterances too short for their units are left out and
counted, the batching that cuts utterances is refused; and the decoding routes: forward.py
without priors at the model's rate, greedy and prefix beam search to words
(decode_ctc_greedy.py), and the TLG graph through the toolkit's decoder."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from hybridasr.ctc.units import UnitOptions, make_units_dir
from hybridasr.train.ctc import CtcObjective, ctc_frames_needed, edit_distance
from train_helpers import REPO, load_pybin, make_tr_cv


def test_frames_needed_and_edit_distance():
    assert ctc_frames_needed([]) == 0
    assert ctc_frames_needed([3, 4, 5]) == 3
    assert ctc_frames_needed([3, 3, 4, 4, 4]) == 5 + 3  # a blank between equal neighbours
    assert edit_distance([1, 2, 3], [1, 2, 3]) == 0
    assert edit_distance([1, 2, 3], [1, 3]) == 1
    assert edit_distance([], [4, 5]) == 2
    assert edit_distance([1, 2], [2, 1]) == 2


def test_objective_matches_ctc_loss_and_counts_greedy_errors():
    from hybridasr.data.batch import Batch

    torch.manual_seed(0)
    logits = torch.randn(2, 6, 5)
    targets = {"a": np.array([1, 2], np.int64), "b": np.array([3, 3, 4], np.int64)}
    batch = Batch(torch.zeros(2, 6, 1), None, torch.tensor([6, 5]), ["a", "b"],
                  [(0, 6), (0, 5)])
    loss, reported, errors, frames = CtcObjective(targets)(logits, batch)
    want = sum(torch.nn.functional.ctc_loss(
        torch.log_softmax(logits[i, :n], -1).unsqueeze(1), torch.tensor([t.tolist()]),
        torch.tensor([n]), torch.tensor([len(t)]), reduction="sum")
        for i, (n, t) in enumerate([(6, targets["a"]), (5, targets["b"])]))
    assert frames == 11 and float(loss) == pytest.approx(float(want), rel=1e-5)
    # errors: the greedy units' edit distance to the reference, on evaluation only
    best = logits.argmax(-1)
    from hybridasr.ctc.decode import collapse

    want_err = sum(edit_distance(collapse(best[i, :n].tolist()), targets[k].tolist())
                   for i, (k, n) in enumerate([("a", 6), ("b", 5)]))
    assert int(errors) == want_err
    _, _, err_train, _ = CtcObjective(targets)(logits.requires_grad_(), batch)
    assert int(err_train) == 0
    # a row that is a piece of an utterance is refused
    from hybridasr.errors import ConfigError

    cut = Batch(torch.zeros(1, 4, 1), None, torch.tensor([4]), ["a"], [(2, 6)])
    with pytest.raises(ConfigError, match="whole utterances"):
        CtcObjective(targets)(logits[:1, :4], cut)


def test_check_objective_refuses_cut_utterances():
    from hybridasr.data.config import DataConfig
    from hybridasr.errors import ConfigError
    from hybridasr.train.objectives import ObjectiveOptions, check_objective

    opts = ObjectiveOptions(objective="ctc")
    check_objective(opts, DataConfig(seq_ordering="laplace:4").strategy, False)
    with pytest.raises(ConfigError, match="CTC paths"):
        check_objective(opts, DataConfig(seq_ordering="frame_shuffle").strategy, False)
    with pytest.raises(ConfigError, match="--chunking"):
        check_objective(opts, DataConfig(seq_ordering="laplace:4").strategy, True)


@pytest.fixture(scope="module")
def ctc_run(tmp_path_factory, kaldi_digits):
    """Units of the training speakers' transcripts, the cv set's with the same model, and a
    small BLSTM trained with --objective=ctc (30 ms frames: --stack-frames=3 --subsample=3)."""
    tmp = tmp_path_factory.mktemp("ctc")
    tr, cv, _ = make_tr_cv(kaldi_digits, tmp)
    make_units_dir(str(tr / "text"), str(tmp / "units"), UnitOptions())
    make_units_dir(str(cv / "text"), str(tmp / "units_cv"), UnitOptions(),
                   model_in=str(tmp / "units" / "units.model"))
    exp = tmp / "ctc"
    argv = ["--model=blstm", "--num-layers=1", "--hidden-size=64", "--dropout=0",
            "--seq-ordering=laplace:4", "--max-frames=2000", "--num-workers=0",
            "--learning-rate=0.004", "--max-iters=2", "--min-batches-per-epoch=40",
            "--progress-every=0", "--num-threads=1", "--objective=ctc", "--stack-frames=3",
            "--subsample=3", str(tr), str(cv), str(tmp / "units"), str(tmp / "units_cv"),
            str(exp)]
    assert load_pybin("train").main(argv) == 0
    return tmp, tr, cv, exp


def test_ctc_training_lowers_the_cv_loss(ctc_run):
    tmp, tr, cv, exp = ctc_run
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert all(x["objective"] == "ctc" for x in h)
    best = min(x["cv_loss"] for x in h[1:] if x["accepted"])
    assert best < 0.5 * h[0]["cv_loss"], h
    assert h[-1]["cv_fer"] < h[0]["cv_fer"], h  # greedy unit errors per output frame
    report = json.loads((exp / "ctc_report.json").read_text())
    assert report["training"]["too_short"] == 0 and report["training"]["utterances"] > 80
    assert report["cross-validation"]["utterances"] > 0
    assert (exp / "curves.png").exists() and (exp / "final.nnet").exists()


def test_too_short_utterances_are_left_out_and_counted(ctc_run, caplog):
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.train.ctc import setup_ctc_data

    tmp, tr, cv, _ = ctc_run
    # 1.2 s frames: the longer words ("seven": 5 units) no longer fit their output frames
    t = FeatureTransform(subsample=120)
    n, tr_set, _, obj = setup_ctc_data(str(tmp / "units"), str(tmp / "units_cv"), str(tr),
                                       str(cv), t, True, str(tmp))
    report = json.loads((tmp / "ctc_report.json").read_text())["training"]
    assert report["too_short"] > 0 and report["utterances"] == len(tr_set.keys)
    assert "no CTC path, left out" in caplog.text
    out = tr_set.output_lengths
    assert all(ctc_frames_needed(obj.targets[k]) <= out[k] for k in tr_set.keys)


def test_decoding_routes(ctc_run, kaldi_digits):
    """forward.py without priors at the model's rate, greedy and prefix beam search to words;
    forward.py at the input rate through the TLG graph with the toolkit's decoder."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    tmp, tr, cv, exp = ctc_run
    ll = tmp / "ll_model"
    assert load_pybin("forward").main(["--output-rate=model", str(exp / "final.nnet"), str(cv),
                                       f"ark,scp:{ll}.ark,{ll}.scp"]) == 0
    mats = dict(read_matrices(f"scp:{ll}.scp"))
    lengths = dict(line.split() for line in open(cv / "feats.scp"))
    assert all(np.allclose(np.exp(m).sum(1), 1, atol=1e-4) for m in mats.values())
    for beam in ("0", "4"):
        hyp = tmp / f"hyp{beam}.txt"
        assert load_pybin("decode_ctc_greedy").main(
            [f"--beam-size={beam}", str(tmp / "units/units.model"), f"scp:{ll}.scp",
             f"ark,t:{hyp}"]) == 0
        hyps = dict(line.rstrip("\n").split(" ", 1) for line in open(hyp))
        assert set(hyps) == set(lengths)
    # the TLG route: input-rate log-posteriors, the identity transition model, words out
    graph = tmp / "graph"
    assert load_pybin("make_ctc_graph").main([str(tmp / "units"), str(kaldi_digits / "data/lang"),
                                              str(graph)]) == 0
    li = tmp / "ll_input"
    assert load_pybin("forward").main([f"--transition-model={graph}/final.mdl",
                                       str(exp / "final.nnet"), str(cv),
                                       f"ark,scp:{li}.ark,{li}.scp"]) == 0
    inp = dict(read_matrices(f"scp:{li}.scp"))
    assert all(len(inp[k]) >= 3 * len(mats[k]) - 2 for k in mats)  # repeated x3
    out = tmp / "tlg.tra"
    assert load_pybin("decode_faster_mapped").main(
        ["--acoustic-scale=0.5", f"--word-symbol-table={graph}/words.txt",
         str(graph / "final.mdl"), str(graph / "HCLG.fst"), f"scp:{li}.scp",
         f"ark,t:{out}"]) == 0
    syms = {w.split()[1]: w.split()[0] for w in open(graph / "words.txt")}
    tra = [line.split() for line in open(out)]
    assert len(tra) == len(mats) and all(t in syms for row in tra for t in row[1:])
    # the graph allows only the lang's words: the hypotheses are words of the lang
    ref = dict(line.split(" ", 1) for line in open(cv / "text"))
    right = sum([syms[t] for t in row[1:]] == ref[row[0]].split() for row in tra)
    assert right >= len(tra) // 2, (right, len(tra))


def test_the_steps(ctc_run, kaldi_digits, repo_dir, env_with_path):
    """steps/nnet/train_ctc.sh (the cv set's units made with the training set's model),
    steps/nnet/decode.sh --class-frame-counts none --output-rate model (as the recipe) with the
    TLG graph dir into wer_LMWT, and
    steps/nnet/decode_ctc_units.sh (prefix beam search) into wer_beam4."""
    import subprocess

    tmp, tr, cv, _ = ctc_run
    exp = tmp / "steps_ctc"

    def run(*args):
        p = subprocess.run(["bash", *map(str, args)], cwd=tmp, env=env_with_path,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        return p.stdout + p.stderr

    run(repo_dir / "steps/nnet/train_ctc.sh", "--train-opts",
        "--model=blstm --num-layers=1 --hidden-size=32 --dropout=0 --seq-ordering=laplace:4 "
        "--num-workers=0 --max-iters=1 --min-batches-per-epoch=20 --progress-every=0 "
        "--num-threads=1 --stack-frames=3 --subsample=3", tr, cv, tmp / "units", exp)
    assert (exp / "final.nnet").exists() and (exp / "units.model").exists()
    assert (exp / "units_cv/targets.scp").exists()  # tmp/units holds the training set only
    graph = exp / "graph"
    assert load_pybin("make_ctc_graph").main([str(tmp / "units"), str(kaldi_digits / "data/lang"),
                                              str(graph)]) == 0
    out = run(repo_dir / "steps/nnet/decode.sh", "--nj", 1, "--class-frame-counts", "none",
              "--output-rate", "model", "--acwt", 1.0, "--lattice-beam", 5, "--scoring-opts", "--min-lmwt 1 --max-lmwt 3", graph, cv,
              exp / "decode_cv")
    assert "best:" in out
    assert all((exp / f"decode_cv/wer_{k}_{wip}").exists() for k in (1, 2, 3)
               for wip in ("0.0", "0.5", "1.0"))
    out = run(repo_dir / "steps/nnet/decode_ctc_units.sh", "--nj", 1, "--beam-size", 4,
              tmp / "units", cv, exp / "decode_cv_beam4")
    assert "%WER" in (exp / "decode_cv_beam4/wer_beam4").read_text()
    hyp = dict(line.rstrip("\n").partition(" ")[::2]
               for line in open(exp / "decode_cv_beam4/hyp.txt"))
    assert set(hyp) == {line.split()[0] for line in open(cv / "text")}

    # a reference spelt otherwise than the lexicon ("Zero," for zero), scored as given and with
    # --ref-normalize true against the units' words.txt: normalised, it gives the WER above
    spelt = tmp / "cv_spelt"
    shutil.copytree(cv, spelt)
    lines = [line.split() for line in open(cv / "text")]
    (spelt / "text").write_text("".join(f"{u} {w[0].capitalize()}, {' '.join(w[1:])}\n"
                                        for u, *w in lines))
    words = kaldi_digits / "data/lang/words.txt"
    wer = {}
    for norm in ("false", "true"):
        d = exp / f"decode_spelt_{norm}"
        run(repo_dir / "steps/nnet/decode_ctc_units.sh", "--nj", 1, "--beam-size", 4,
            "--words", words, "--ref-normalize", norm, tmp / "units", spelt, d)
        wer[norm] = (d / "wer_beam4").read_text().split("\n", 1)[0]
        report = json.loads((d / "scoring/reference.json").read_text())
        assert report["normalizable"] == len(lines) and report["normalized"] == (norm == "true")
    assert wer["true"] == (exp / "decode_cv_beam4/wer_beam4").read_text().split("\n", 1)[0]
    filt = {n: (exp / f"decode_spelt_{n}/test_filt.txt").read_text() for n in wer}
    assert filt["true"] == (exp / "decode_cv_beam4/test_filt.txt").read_text()
    assert filt["false"].count(",") == len(lines)  # as given
    p = subprocess.run(["bash", str(repo_dir / "steps/nnet/decode_ctc_units.sh"),
                        "--ref-normalize", "true", tmp / "units", spelt, exp / "x"], cwd=tmp,
                       env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 1 and "--ref-normalize true needs --words" in p.stderr


@pytest.mark.parametrize("mode", ["ddp", "average"])
def test_ctc_under_torchrun(ctc_run, tmp_path, env_with_path, mode):
    """--objective=ctc trains on two processes as cross-entropy does: DDP (gradients
    all-reduced every step) and parameter averaging, the ranks' halves together the whole set."""
    import os
    import subprocess
    import sys

    tmp, tr, cv, _ = ctc_run
    exp = tmp_path / mode
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", str(REPO / "pybin" / "train.py"), f"--parallel={mode}", "--sync-every=3",
           "--model=blstm", "--num-layers=1", "--hidden-size=24", "--seq-ordering=laplace:2",
           "--max-frames=1500", "--num-workers=0", "--max-iters=2", "--num-threads=1",
           "--progress-every=0", "--objective=ctc", "--stack-frames=3", "--subsample=3",
           str(tr), str(cv), str(tmp / "units"), str(tmp / "units_cv"), str(exp)]
    p = subprocess.run(cmd, env=env_with_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    h = [json.loads(line) for line in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [x["epoch"] for x in h] == [0, 1, 2]
    assert all(x["world_size"] == 2 and x["objective"] == "ctc" for x in h[1:])
    assert h[2]["cv_loss"] < h[0]["cv_loss"]
    assert os.path.exists(exp / "final.nnet")


def test_ctc_trains_the_lstm(ctc_run, tmp_path):
    """The unidirectional LSTM trains with --objective=ctc too (CV loss below the start)."""
    tmp, tr, cv, _ = ctc_run
    exp = tmp_path / "lstm"
    assert load_pybin("train").main([
        "--model=lstm", "--num-layers=1", "--hidden-size=64", "--seq-ordering=laplace:4",
        "--max-frames=2000", "--num-workers=0", "--learning-rate=0.004", "--max-iters=1",
        "--min-batches-per-epoch=40", "--progress-every=0", "--num-threads=1",
        "--objective=ctc", "--stack-frames=3", "--subsample=3", str(tr), str(cv),
        str(tmp / "units"), str(tmp / "units_cv"), str(exp)]) == 0
    h = [json.loads(x) for x in open(exp / "metrics.jsonl", encoding="utf-8")]
    assert [x["objective"] for x in h] == ["ctc", "ctc"]
    assert h[1]["cv_loss"] < h[0]["cv_loss"]
