"""transcribe.py (steps/nnet/transcribe.sh) with a model dir that steps/nnet/train.sh trained on
kaldi_digits (a tiny BLSTM, once per module): the words are those of the decode pipeline
(make_mfcc.sh, compute_cmvn_stats.sh, decode.sh, score.sh) on the same audio at the same LM
weight; the CTM's words spell their pronunciations over the best path's phones and lie within
the audio, and equal steps/get_ctm.sh's on the pipeline's lattices; with --gmm-dir, the words of
decode.sh --gmm-dir; stdin and wav.scp pipes;
bad input named; online CMVN as Kaldi's OnlineCmvn; the global CMVN stats train.sh writes."""
from __future__ import annotations

import io
import logging
import shutil
import subprocess
import sys
import types
from pathlib import Path

import kaldiio
import numpy as np
import pytest
import soundfile as sf

from hybridasr.errors import HybridAsrError
from hybridasr.features.online_cmvn import online_cmvn, read_stats
from train_helpers import load_pybin, make_tr_cv

TRAIN_OPTS = ("--max-iters=8 --num-layers=1 --hidden-size=64 --learning-rate=0.01 "
              "--keep-lr-iters=8 --progress-every=0 --num-workers=0")
LMWT = 8  # not the search's own (1/acwt = 10): the LM weight reaches the best path


def run(args, env, cwd, stdin=None, **kw):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          timeout=300, input=stdin, **kw)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, kaldi_digits, repo_dir, env_with_path):
    """(work dir, model dir, graph dir, wav.scp of data/test with absolute paths)."""
    work = tmp_path_factory.mktemp("transcribe")
    tr, cv, ali = make_tr_cv(kaldi_digits, work)
    (tr / "conf").mkdir()
    shutil.copy(kaldi_digits / "conf/mfcc.conf", tr / "conf/mfcc.conf")  # as Kaldi's make_mfcc.sh
    p = run(["bash", repo_dir / "steps/nnet/train.sh", "--train-opts", TRAIN_OPTS, tr.name,
             cv.name, kaldi_digits / "data/lang", ali.name, ali.name, "exp/blstm"],
            env_with_path, work, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    scp = work / "test_wav.scp"
    scp.write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in (
        line.split() for line in (kaldi_digits / "data/test/wav.scp").read_text().splitlines())))
    return work, work / "exp/blstm", kaldi_digits / "exp/mono/graph", scp


def transcribe(repo_dir, env, cwd, *args, stdin=None):
    return run([sys.executable, repo_dir / "pybin/transcribe.py", *args], env, cwd, stdin=stdin)


def test_train_sh_saves_global_cmvn_stats_and_feature_conf(setup, kaldi_digits):
    work, model, _, _ = setup
    want = sum(np.asarray(m, np.float64) for _, m in
               kaldiio.load_scp(str(work / "data_tr/cmvn.scp")).items())
    got = read_stats(str(model / "global_cmvn.stats"))
    np.testing.assert_allclose(got, want, rtol=1e-6)  # Kaldi's text precision
    assert got[0, -1] == sum(len(m) for m in kaldiio.load_scp(str(work / "data_tr/feats.scp"))
                             .values())
    assert (model / "conf/mfcc.conf").read_text() == (kaldi_digits / "conf/mfcc.conf").read_text()


def _pipeline_hyps(work, repo_dir, env, graph, scp, decode_opts=(), name="decode_wav"):
    """decode.sh's words at LMWT on the test audio: features made by make_mfcc.sh, CMVN stats
    per recording (each utterance its own speaker), lattices, score.sh at penalty 0."""
    data = work / "data_test_wav"
    if (data / "cmvn.scp").is_file():  # (made by an earlier test of the module)
        return _decoded_hyps(work, repo_dir, env, graph, data, decode_opts, name)
    data.mkdir()
    shutil.copy(scp, data / "wav.scp")
    keys = [line.split()[0] for line in scp.read_text().splitlines()]
    (data / "utt2spk").write_text("".join(f"{k} {k}\n" for k in keys))
    shutil.copy(data / "utt2spk", data / "spk2utt")
    shutil.copy(Path(env["KALDI_DIGITS"]) / "data/test/text", data / "text")
    for cmd in (["steps/make_mfcc.sh", "--nj", "1", "--compress", "false", "--mfcc-config",
                 work / "exp/blstm/conf/mfcc.conf", data, work / "log", work / "mfcc"],
                ["steps/compute_cmvn_stats.sh", data, work / "log", work / "mfcc"]):
        p = run(["bash", repo_dir / cmd[0], *cmd[1:]], env, work, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    return _decoded_hyps(work, repo_dir, env, graph, data, decode_opts, name)


def _decoded_hyps(work, repo_dir, env, graph, data, decode_opts, name):
    p = run(["bash", repo_dir / "steps/nnet/decode.sh", "--nj", "1", "--srcdir",
             work / "exp/blstm", *decode_opts, "--scoring-opts",
             f"--min-lmwt {LMWT} --max-lmwt {LMWT} --word-ins-penalty 0.0",
             graph, data, work / "exp/blstm" / name], env, work, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    words = {i: w for w, i in (line.split() for line in (graph / "words.txt").read_text()
                               .splitlines())}
    return {k: [words[i] for i in v] for k, *v in (
        line.split() for line in
        (work / f"exp/blstm/{name}/scoring/{LMWT}.tra").read_text().splitlines())}


def _lines(text):
    return {k: v for k, *v in (line.split() for line in text.splitlines())}


def test_words_and_ctm_match_the_decode_pipeline(setup, repo_dir, env_with_path, kaldi_digits):
    work, model, graph, scp = setup
    env = dict(env_with_path, KALDI_DIGITS=str(kaldi_digits))
    want = _pipeline_hyps(work, repo_dir, env, graph, scp)
    p = transcribe(repo_dir, env, work, "--cmvn=utterance", f"--lm-weight={LMWT}",
                   f"--ctm={work}/t.ctm", "--wav-scp", scp, model, graph)
    assert p.returncode == 0, p.stderr.decode()
    got = _lines(p.stdout.decode())
    assert len(want) == 30 and got == want
    assert sum(len(v) for v in got.values()) >= 12  # a model that says something
    ctm = [line.split() for line in (work / "t.ctm").read_text().splitlines()]
    assert all(len(c) == 6 and c[1] == "1" for c in ctm)
    by_utt = {}
    for c in ctm:
        by_utt.setdefault(c[0], []).append(c)
    assert {k: [c[4] for c in v] for k, v in by_utt.items()} == {k: v for k, v in got.items() if v}
    # the CTM's times: each word spans exactly the phones of its pronunciation on the best
    # path of the pipeline's lattice (ali-to-phones of lattice-best-path), within the audio
    from hybridasr.align.phones import phone_segments
    from hybridasr.decode.lattice_best_path import best_path
    from hybridasr.kaldi.lattice import read_lattices
    from hybridasr.kaldi.transition_model import read_transition_model

    tm = read_transition_model(str(model / "final.mdl"))
    lex = {}
    for line in (graph / "phones/align_lexicon.int").read_text().splitlines():
        w, _, *phones = map(int, line.split())
        lex.setdefault(w, []).append(phones)
    word_id = {w: int(i) for w, i in (line.split() for line in
                                      (graph / "words.txt").read_text().splitlines())}
    audio = dict(line.split() for line in scp.read_text().splitlines())
    lats = dict(read_lattices(f"ark:gunzip -c {work}/exp/blstm/decode_wav/lat.1.gz|"))
    confs = []
    for utt, words in by_utt.items():
        bp = best_path(lats[utt].scaled(1.0, 1.0 / LMWT))
        frame_phone = np.repeat(*zip(*phone_segments(tm, np.asarray(bp.tids))))
        bounds = np.cumsum([0] + [n for _, n in phone_segments(tm, np.asarray(bp.tids))])
        duration = sf.info(audio[utt]).duration
        end_before = 0.0
        for _, _, start, dur, word, conf in words:
            s, e = round(float(start) / 0.01), round((float(start) + float(dur)) / 0.01)
            assert s in bounds and e in bounds and float(start) >= end_before
            spelled = [int(p) for i, p in enumerate(frame_phone[s:e])
                       if i == 0 or s + i in bounds]
            assert spelled in lex[word_id[word]], (utt, word, spelled)
            assert float(start) + float(dur) <= duration + 1e-6
            end_before = float(start) + float(dur)
            confs.append(float(conf))
    assert all(0.0 <= c <= 1.0 for c in confs) and min(confs) < 1.0 and max(confs) > 0.5
    # steps/get_ctm.sh on the pipeline's decode dir: the same CTM (the same lattices)
    p = run(["bash", repo_dir / "steps/get_ctm.sh", "--min-lmwt", LMWT, "--max-lmwt", LMWT,
             work / "data_test_wav", graph, work / "exp/blstm/decode_wav"], env, work, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    kaldi_ctm = (work / f"exp/blstm/decode_wav/score_{LMWT}/data_test_wav.ctm").read_text()
    assert kaldi_ctm == (work / "t.ctm").read_text()
    # without --min/max-lmwt: the best LM weight of the scoring (the only one here)
    shutil.rmtree(work / f"exp/blstm/decode_wav/score_{LMWT}")
    p = run(["bash", repo_dir / "steps/get_ctm.sh", work / "data_test_wav", graph,
             work / "exp/blstm/decode_wav"], env, work, text=True)
    assert p.returncode == 0 and f"LM weight {LMWT}, word insertion penalty 0.0" in p.stdout
    assert (work / f"exp/blstm/decode_wav/score_{LMWT}/data_test_wav.ctm").read_text() == \
        kaldi_ctm
    # Kaldi's MBR (sausage) confidences of the best path's words: get_ctm.sh's and
    # transcribe.py's agree too, the words and times as before (one word an utterance here:
    # its bin posterior is its posterior, so the confidences too; tests/test_mbr.py has
    # lattices where they differ)
    p = transcribe(repo_dir, env, work, "--cmvn=utterance", f"--lm-weight={LMWT}",
                   "--confidence=mbr", "--decode-mbr=false", f"--ctm={work}/mbr.ctm",
                   "--wav-scp", scp, model, graph)
    assert p.returncode == 0, p.stderr.decode()
    assert _lines(p.stdout.decode()) == want
    p = run(["bash", repo_dir / "steps/get_ctm.sh", "--confidence", "mbr", "--decode-mbr",
             "false", "--min-lmwt", LMWT, "--max-lmwt", LMWT, work / "data_test_wav", graph,
             work / "exp/blstm/decode_wav"], env, work, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    mbr = (work / f"exp/blstm/decode_wav/score_{LMWT}/data_test_wav.ctm").read_text()
    assert mbr == (work / "mbr.ctm").read_text()
    strip = lambda text: [c.split()[:5] for c in text.splitlines()]  # noqa: E731
    assert strip(mbr) == strip(kaldi_ctm)


def test_gmm_dir_adds_the_gmms_loglikes_as_decode_sh(setup, repo_dir, env_with_path,
                                                      kaldi_digits, tmp_path):
    """--gmm-dir: the words of decode.sh --gmm-dir on the same audio (the GMM's own features
    from the same MFCCs: per-recording CMVN, deltas; 0.5 each), through the step script too;
    refused: --online, another tree, fMLLR transforms in the dir, a weight out of (0, 1]."""
    work, model, graph, scp = setup
    env = dict(env_with_path, KALDI_DIGITS=str(kaldi_digits))
    gmm = kaldi_digits / "exp/mono_ali"
    for weight in ("0.5", "1"):
        want = _pipeline_hyps(work, repo_dir, env, graph, scp,
                              ["--gmm-dir", gmm, "--gmm-weight", weight], f"decode_gmm{weight}")
        p = transcribe(repo_dir, env, work, "--cmvn=utterance", f"--lm-weight={LMWT}",
                       f"--gmm-dir={gmm}", f"--gmm-weight={weight}", "--wav-scp", scp, model,
                       graph)
        assert p.returncode == 0, p.stderr.decode()
        assert _lines(p.stdout.decode()) == want and len(want) == 30
        assert sum(len(v) for v in want.values()) >= 12
    p = run(["bash", repo_dir / "steps/nnet/transcribe.sh", "--cmvn", "utterance", "--lm-weight",
             LMWT, "--gmm-dir", gmm, "--gmm-weight", "1", "--wav-scp", scp, model, graph],
            env_with_path, work)
    assert p.returncode == 0 and _lines(p.stdout.decode()) == want, p.stderr.decode()[-2000:]
    main = load_pybin("transcribe").main
    wav = str(kaldi_digits / "digits_audio/test/theo_1/7.wav")
    with pytest.raises(HybridAsrError, match="--gmm-dir: not with --online"):
        main(["--online=true", f"--gmm-dir={gmm}", str(model), str(graph), wav])
    with pytest.raises(HybridAsrError, match=r"--gmm-weight=0: give a number above 0"):
        main(["--gmm-weight=0", f"--gmm-dir={gmm}", str(model), str(graph), wav])
    other = tmp_path / "other"
    shutil.copytree(gmm, other)
    (other / "tree").write_bytes((other / "tree").read_bytes() + b" ")
    with pytest.raises(HybridAsrError, match="its tree is not the network's"):
        main([f"--gmm-dir={other}", str(model), str(graph), wav])
    shutil.copy(gmm / "tree", other / "tree")
    (other / "trans.1").write_bytes(b"")
    with pytest.raises(HybridAsrError, match=r"holds fMLLR transforms \(trans\.\*\)"):
        main([f"--gmm-dir={other}", str(model), str(graph), wav])


def test_utt2spk_gives_the_speakers_cmvn_as_decode_sh(setup, repo_dir, env_with_path,
                                                        kaldi_digits, tmp_path):
    """--utt2spk: the recordings of a speaker share its CMVN stats: the words of decode.sh on a
    data dir of the same features with those speakers (compute_cmvn_stats.sh per speaker);
    not with --online."""
    work, model, graph, scp = setup
    env = dict(env_with_path, KALDI_DIGITS=str(kaldi_digits))
    _pipeline_hyps(work, repo_dir, env, graph, scp, (), "decode_wav_u")  # (the data dir)
    data = work / "data_test_spk"
    data.mkdir()
    for name in ("wav.scp", "feats.scp", "text"):
        shutil.copy(work / "data_test_wav" / name, data / name)
    utt2spk = kaldi_digits / "data/test/utt2spk"
    shutil.copy(utt2spk, data / "utt2spk")
    shutil.copy(kaldi_digits / "data/test/spk2utt", data / "spk2utt")
    assert len(set(utt2spk.read_text().split()[1::2])) < 30  # speakers of several recordings
    p = run(["bash", repo_dir / "steps/compute_cmvn_stats.sh", data, work / "log",
             work / "mfcc"], env, work, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    want = _decoded_hyps(work, repo_dir, env, graph, data, (), "decode_spk")
    p = transcribe(repo_dir, env, work, f"--lm-weight={LMWT}", f"--utt2spk={utt2spk}",
                   "--wav-scp", scp, model, graph)
    assert p.returncode == 0, p.stderr.decode()
    assert _lines(p.stdout.decode()) == want and len(want) == 30
    main = load_pybin("transcribe").main
    with pytest.raises(HybridAsrError, match="--utt2spk: not with --online"):
        main(["--online=true", f"--utt2spk={utt2spk}", "--wav-scp", str(scp), str(model),
              str(graph)])


def test_stdin_wav_scp_pipes_and_the_step_script(setup, repo_dir, env_with_path, kaldi_digits,
                                                  capsys, monkeypatch):
    """The same audio as a file, on stdin and through a wav.scp pipe gives the same words
    (no dither: the features do not depend on the id); transcribe.py in this process."""
    work, model, graph, _ = setup
    main = load_pybin("transcribe").main
    conf = work / "mfcc_nodither.conf"  # (the type from the name)
    conf.write_text((model / "conf/mfcc.conf").read_text() + "\n--dither=0\n")
    wav = kaldi_digits / "digits_audio/test/theo_1/7.wav"
    args = [f"--feat-config={conf}", str(model), str(graph)]
    assert main(args + [str(wav)]) == 0
    (key, *words), = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert key == "7" and words
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(wav.read_bytes())))
    assert main(args + ["-"]) == 0
    assert capsys.readouterr().out.split() == ["stdin", *words]
    (work / "pipe.scp").write_text(f"rec7 cat {wav} |\n")
    assert main(args + ["--wav-scp", str(work / "pipe.scp")]) == 0
    assert capsys.readouterr().out.split() == ["rec7", *words]
    # the step script: the default (online CMVN from global_cmvn.stats), stdout the text
    p = run(["bash", repo_dir / "steps/nnet/transcribe.sh", "--feat-config", conf, model,
             graph, "-"], env_with_path, work, stdin=wav.read_bytes())
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().split()[0] == "stdin"
    p = run(["bash", repo_dir / "steps/nnet/transcribe.sh", model, graph], env_with_path, work)
    assert p.returncode == 1 and b"e.g.:" in p.stderr


def test_bad_input_is_named(setup, repo_dir, env_with_path, kaldi_digits, tmp_path, caplog,
                            capsys, monkeypatch):
    work, model, graph, _ = setup
    good = kaldi_digits / "digits_audio/test/theo_1/2.wav"
    (tmp_path / "notes.wav").write_text("not a wav at all\n")
    (tmp_path / "empty.wav").write_bytes(b"")
    x, rate = sf.read(str(good), dtype="int16")
    sf.write(str(tmp_path / "fast.wav"), np.repeat(x, 2), 2 * rate, subtype="PCM_16")
    p = transcribe(repo_dir, env_with_path, work, model, graph, good, tmp_path / "notes.wav",
                   tmp_path / "empty.wav", tmp_path / "fast.wav")
    err = p.stderr.decode()
    assert p.returncode == 1 and "Traceback" not in err
    assert p.stdout.decode().startswith("2 ")  # the good one is transcribed
    assert f"{tmp_path}/notes.wav: not audio" in err
    assert f"{tmp_path}/empty.wav: empty file" in err
    assert f"{tmp_path}/fast.wav: sample rate 16000 Hz, but the model's features are 8000 Hz" \
        in err and "--allow-downsample" in err
    assert "3 of 4 recordings could not be transcribed" in err
    # in this process from here (faster): a conf that allows resampling: resampled, a note
    main = load_pybin("transcribe").main
    conf = tmp_path / "mfcc.conf"
    conf.write_text((model / "conf/mfcc.conf").read_text() + "\n--allow-downsample=true\n")
    with caplog.at_level(logging.WARNING):
        assert main([f"--feat-config={conf}", str(model), str(graph),
                     str(tmp_path / "fast.wav")]) == 0
    assert "16000 Hz resampled to 8000 Hz" in caplog.text
    assert capsys.readouterr().out.startswith("fast")
    # a graph dir without HCLG.fst; stdin with nothing on it
    (tmp_path / "graph").mkdir()
    shutil.copy(graph / "words.txt", tmp_path / "graph/words.txt")
    with pytest.raises(HybridAsrError, match=f"graph dir {tmp_path}/graph has no HCLG.fst"):
        main([str(model), str(tmp_path / "graph"), str(good)])
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(b"")))
    caplog.clear()
    with pytest.raises(HybridAsrError, match="1 of 1 recordings could not be transcribed"):
        main([str(model), str(graph), "-"])
    assert "stdin: empty input" in caplog.text


def test_global_stats_from_the_training_record_else_per_recording(setup, tmp_path):
    """A model dir without global_cmvn.stats: summed from the training data's cmvn.scp named
    by train.conf's command line; without that record, per-recording CMVN with a note."""
    from hybridasr.decode.model_dir import load_model_dir

    work, model, _, _ = setup
    copy = work / "exp/old"
    shutil.copytree(model, copy, symlinks=False, ignore=shutil.ignore_patterns("nnet", "decode_*"))
    (copy / "global_cmvn.stats").unlink()
    (copy / "train.conf").write_text((model / "train.conf").read_text()
                                     .replace(" exp/blstm", " exp/old"))
    md = load_model_dir(str(copy))
    assert md.cmvn == "online" and md.cmvn_source.endswith("data_tr/cmvn.scp")
    np.testing.assert_allclose(md.global_stats, read_stats(str(model / "global_cmvn.stats")),
                               rtol=1e-6)
    (copy / "train.conf").unlink()
    shutil.rmtree(copy / "log")
    md = load_model_dir(str(copy))
    assert md.cmvn == "utterance" and md.global_stats is None
    with pytest.raises(Exception, match="--cmvn=online: .* no record of its training data"):
        load_model_dir(str(copy), cmvn="online")


def _kaldi_online_cmvn(feats, g, window, global_frames, norm_vars):
    """Kaldi's OnlineCmvn::GetFrame, frame by frame (ComputeStatsForFrame,
    SmoothOnlineCmvnStats without speaker stats, ApplyCmvn)."""
    out = np.zeros_like(feats, dtype=np.float64)
    dim = feats.shape[1]
    for t in range(len(feats)):
        w = feats[max(0, t - window + 1):t + 1].astype(np.float64)
        stats = np.zeros((2, dim + 1))
        stats[0, :dim], stats[1, :dim], stats[0, dim] = w.sum(0), (w * w).sum(0), len(w)
        if stats[0, dim] < window:
            extra = min(window - stats[0, dim], global_frames)
            stats += extra / g[0, dim] * g
        mean = stats[0, :dim] / stats[0, dim]
        out[t] = feats[t] - mean
        if norm_vars:
            var = stats[1, :dim] / stats[0, dim] - mean ** 2
            out[t] /= np.sqrt(var)
    return out


@pytest.mark.parametrize("norm_vars", [False, True])
def test_online_cmvn_is_kaldis(norm_vars):
    rng = np.random.default_rng(0)
    feats = rng.normal(3.0, 2.0, (70, 4)).astype(np.float32)
    g = np.zeros((2, 5))
    gx = rng.normal(1.0, 1.5, (500, 4))
    g[0, :4], g[1, :4], g[0, 4] = gx.sum(0), (gx * gx).sum(0), 500
    for window, global_frames in ((600, 200), (30, 10), (50, 100)):
        got = online_cmvn(feats, g, norm_vars, window, global_frames)
        want = _kaldi_online_cmvn(feats, g, window, global_frames, norm_vars)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
