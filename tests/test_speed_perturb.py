"""Speed perturbation on kaldi_digits: the 3-way data dir Kaldi's scripts would make
(names, tables, durations), its features through the wav pipe (in process, equal to the pipe,
~1/F the frames), the resampled alignments (exactly the perturbed features' lengths, a wrong
one named). (The recipe trained on the speed copies to a WER: tests/test_recipe_e2e.py, whose
kaldi_digits run makes them by default.)"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hybridasr.align.speed_perturb import perturbed_source, resample_alignment
from hybridasr.datadir.speed_perturb import parse_speed_pipe, perturb_data_dir_speed, speed_pipe
from hybridasr.errors import FormatError
from hybridasr.features.audio import read_extended_filename
from hybridasr.features.speed import resample, speed_perturb
from hybridasr.kaldi.io.intvec import read_int_vector_scp
from hybridasr.kaldi.io.table import read_int_map, read_map


def sh(args, cwd, env, ok=True):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if ok:
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


@pytest.fixture(scope="module")
def sp_dir(tmp_path_factory, kaldi_digits, repo_dir, env_with_path):
    """A kaldi_digits copy with data/train_sp (3-way) and its features, and the GMM alignment
    imported for data/train (Kaldi's features: the lengths the alignment was made with)."""
    root = tmp_path_factory.mktemp("sp") / "kaldi_digits"
    shutil.copytree(kaldi_digits, root, symlinks=True)
    for d, _, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            if not os.path.islink(os.path.join(d, f)):
                os.chmod(os.path.join(d, f), 0o644)
    env = dict(env_with_path, HYBRIDASR_ROOT=str(repo_dir))
    u = repo_dir / "utils"
    sh([str(u / "data/perturb_data_dir_speed_3way.sh"), "data/train", "data/train_sp"], root, env)
    sh([str(repo_dir / "steps/make_mfcc.sh"), "--nj", "1", "--mfcc-config", "conf/mfcc.conf",
        "data/train_sp", "exp/make_mfcc/train_sp", "mfcc_sp"], root, env)
    sh([str(u / "data/get_utt2num_frames.sh"), "data/train"], root, env)
    sh([str(repo_dir / "steps/import_ali.sh"), "exp/mono_ali", "data/train", "exp/ali_train"],
       root, env)
    return root, env


def test_3way_dir_names_and_files(sp_dir, kaldi_digits):
    root, env = sp_dir
    src, sp = kaldi_digits / "data/train", root / "data/train_sp"
    orig = read_map(str(src / "utt2spk"))
    utt2spk = read_map(str(sp / "utt2spk"))
    assert len(utt2spk) == 3 * len(orig)
    for utt, spk in orig.items():
        assert utt2spk[utt] == spk  # the 1.0 copy keeps its names
        for f in ("0.9", "1.1"):
            assert utt2spk[f"sp{f}-{utt}"] == f"sp{f}-{spk}"
    spk2utt = read_map(str(sp / "spk2utt"))
    assert set(spk2utt) == set(utt2spk.values())
    text, text_sp = read_map(str(src / "text")), read_map(str(sp / "text"))
    assert all(text_sp[f"sp1.1-{u}"] == text_sp[u] == w for u, w in text.items())
    gender = read_map(str(src / "spk2gender"))
    gender_sp = read_map(str(sp / "spk2gender"))
    assert all(gender_sp[f"sp0.9-{s}"] == g for s, g in gender.items())
    wav, wav_sp = read_map(str(src / "wav.scp")), read_map(str(sp / "wav.scp"))
    u = next(iter(orig))
    assert wav_sp[u] == wav[u]
    if shutil.which("sox", path=env["PATH"]) is None:
        assert wav_sp[f"sp0.9-{u}"] == f"wav_speed_perturb.py --factor=0.9 {wav[u]} - |"
    else:
        assert wav_sp[f"sp0.9-{u}"] == f"sox -t wav {wav[u]} -t wav - speed 0.9 |"
    uniq = read_map(str(sp / "utt2uniq"))
    assert uniq[f"sp1.1-{u}"] == u and uniq[u] == u
    dur = read_map(str(root / "data/train/utt2dur"))  # made in the source, as Kaldi does
    dur_sp = read_map(str(sp / "utt2dur"))
    for f in (0.9, 1.1):
        assert float(dur_sp[f"sp{f}-{u}"]) == pytest.approx(float(dur[u]) / f, rel=1e-5)
    assert (sp / "reco2dur").exists()
    sh([os.path.join(env["HYBRIDASR_ROOT"], "utils/validate_data_dir.sh"), "--no-feats",
        "data/train_sp"], root, env)


def test_segments_and_pipes(tmp_path):
    """The Kaldi conventions with segments (recordings renamed, times /F as %.2f) and the three
    kinds of wav.scp entries."""
    d = tmp_path / "src"
    d.mkdir()
    (d / "wav.scp").write_text("r1 a.wav\nr2 gunzip -c b.wav.gz |\n")
    (d / "segments").write_text("s1_u1 r1 0.00 1.00\ns1_u2 r2 0.50 2.25\n")
    (d / "utt2spk").write_text("s1_u1 s1\ns1_u2 s1\n")
    (d / "spk2utt").write_text("s1 s1_u1 s1_u2\n")
    (d / "utt2dur").write_text("s1_u1 1\ns1_u2 1.75\n")
    (d / "reco2dur").write_text("r1 1.5\nr2 3\n")
    perturb_data_dir_speed(str(d), str(tmp_path / "sp"), ["0.9"])
    sp = tmp_path / "sp"
    assert (sp / "segments").read_text() == \
        "sp0.9-s1_u1 sp0.9-r1 0.00 1.11\nsp0.9-s1_u2 sp0.9-r2 0.56 2.50\n"
    assert read_map(str(sp / "wav.scp")) == {
        "sp0.9-r1": "wav_speed_perturb.py --factor=0.9 a.wav - |",
        "sp0.9-r2": "gunzip -c b.wav.gz | wav_speed_perturb.py --factor=0.9 - - |"}
    assert read_map(str(sp / "reco2dur"))["sp0.9-r2"] == "3.33333"
    assert speed_pipe("x.ark:12", "1.1", use_sox=True) == \
        "wav_speed_perturb.py --factor=1.1 x.ark:12 - |"  # no wav-copy here
    assert speed_pipe("a.wav", "1.1", use_sox=True) == "sox -t wav a.wav -t wav - speed 1.1 |"
    for value, inner in (("a.wav", "a.wav"), ("gunzip -c b.wav.gz |", "gunzip -c b.wav.gz |"),
                         ("x.ark:12", "x.ark:12")):
        assert parse_speed_pipe(speed_pipe(value, "0.9", use_sox=False)) == (inner, "0.9")
    assert parse_speed_pipe("sox -t wav a.wav -t wav - speed 0.9 |") is None
    with pytest.raises(FormatError, match="feats.scp already exists"):
        (sp / "feats.scp").write_text("")
        perturb_data_dir_speed(str(d), str(sp), ["0.9"])


def test_resampler_is_torchaudios_and_the_pipe_gives_the_same_samples(sp_dir, repo_dir):
    torch = pytest.importorskip("torch")
    import torchaudio.functional as F

    root, env = sp_dir
    wav = read_map(str(root / "data/train/wav.scp"))
    path = str(root / next(iter(wav.values())))
    x, rate = read_extended_filename(path)
    for p, q in ((9, 10), (11, 10)):
        ours = resample(x[:, 0], p, q)
        theirs = F.resample(torch.from_numpy(x[:, 0].copy()), p, q).numpy()
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() < 0.05  # float32 sums in another order
    inproc, r1 = read_extended_filename(f"wav_speed_perturb.py --factor=0.9 {path} - |")
    # the pipe itself (run: a form the reader does not take in process)
    pipe = f"cat {path} | {sys.executable} {repo_dir}/pybin/wav_speed_perturb.py --factor=0.9 - - |"
    assert parse_speed_pipe(pipe) is None
    piped, r2 = read_extended_filename(pipe)
    assert r1 == r2 == rate and np.array_equal(inproc, piped)
    assert np.array_equal(inproc[:, 0], speed_perturb(x[:, 0], "0.9"))
    assert abs(len(inproc) - len(x) / 0.9) <= 1


def test_features_of_perturbed_copies(sp_dir):
    root, _ = sp_dir
    n = read_int_map(str(root / "data/train_sp/utt2num_frames"))
    assert len(n) == 360
    for utt, frames in n.items():
        src = perturbed_source(utt, set(k for k in n if not k.startswith("sp")))
        if src is None:
            continue
        assert abs(frames - n[src[0]] / src[1]) <= 1.5, utt
    total = {f: sum(v for k, v in n.items() if k.startswith(f"sp{f}-")) for f in ("0.9", "1.1")}
    base = sum(v for k, v in n.items() if not k.startswith("sp"))
    assert total["0.9"] / base == pytest.approx(1 / 0.9, rel=0.01)
    assert total["1.1"] / base == pytest.approx(1 / 1.1, rel=0.01)


def test_resample_alignment_unit():
    ali = np.array([5] * 10 + [7] * 20 + [9] * 10)
    for n in (36, 40, 44, 100):
        out = resample_alignment(ali, n)
        assert len(out) == n
        assert list(dict.fromkeys(out.tolist())) == [5, 7, 9]  # the same segments, in order
    assert resample_alignment(ali, 1).tolist() == [7]  # the middle
    assert np.array_equal(resample_alignment(ali, 40), ali)
    out = resample_alignment(ali, 44)  # boundaries move with the audio: 11 / 22 / 11
    assert (out == 5).sum() == 11 and (out == 7).sum() == 22 and (out == 9).sum() == 11
    assert perturbed_source("sp0.9-a", {"a"}) == ("a", 0.9)
    assert perturbed_source("a", {"a"}) is None and perturbed_source("b", {"a"}) is None


def _runs(labels):
    """The labels of the segments of equal labels, in order."""
    x = np.asarray(labels)
    return x[np.r_[True, x[1:] != x[:-1]]].tolist()


def test_perturbed_targets_match_the_features_exactly(sp_dir, repo_dir, monkeypatch):
    root, env = sp_dir
    monkeypatch.chdir(root)  # the scps name their arks relative to the recipe dir, as Kaldi's
    sh([str(repo_dir / "steps/perturb_ali.sh"), "exp/ali_train", "data/train_sp",
        "exp/ali_train_sp"], root, env)
    targets = read_int_vector_scp(str(root / "exp/ali_train_sp/targets.scp"))
    frames = read_int_map(str(root / "data/train_sp/utt2num_frames"))
    orig = read_int_vector_scp(str(root / "exp/ali_train/targets.scp"))
    assert set(targets) == set(frames)
    for utt, t in targets.items():
        assert len(t) == frames[utt] or (utt in orig and len(t) == len(orig[utt])), utt
        if utt.startswith("sp"):
            assert len(t) == frames[utt]
            src = utt.split("-", 1)[1]
            runs, orig_runs = _runs(t), _runs(orig[src])
            if utt.startswith("sp0.9-"):  # stretched: every segment is still there
                assert runs == orig_runs, utt
            else:  # squeezed: a one-frame segment may go, the order stays
                it = iter(orig_runs)
                assert all(r in it for r in runs), utt
    assert (root / "exp/ali_train_sp/pdf_counts").exists()
    assert (root / "exp/ali_train_sp/num_pdfs").read_text() == \
        (root / "exp/ali_train/num_pdfs").read_text()
    # a copy whose features are not its original's at that speed is named
    bad = root / "data/bad"
    shutil.copytree(root / "data/train_sp", bad)
    n = read_int_map(str(bad / "utt2num_frames"))
    n["sp1.1-jackson_0_3"] += 4
    (bad / "utt2num_frames").write_text("".join(f"{k} {v}\n" for k, v in n.items()))
    p = sh([str(repo_dir / "steps/perturb_ali.sh"), "exp/ali_train", "data/bad", "exp/ali_bad"],
           root, env, ok=False)
    assert p.returncode != 0
    assert "sp1.1-jackson_0_3" in p.stderr + p.stdout + \
        (root / "exp/ali_bad/log/perturb_ali.log").read_text()
    assert not (root / "exp/ali_bad/targets.scp").exists()
