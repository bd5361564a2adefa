"""steps/align_si.sh --generate-lats true: the lattices of the training graphs that Kaldi's
steps/align_fmllr_lats.sh writes for chain training (beam and lattice beam 20,
--word-determinize=false), here with Kaldi's own monophone GMM of kaldi_digits: every
utterance's lattice holds the transcript's alternatives (optional silences), its best path is
the Viterbi alignment Kaldi made, and the chain numerator reads the dir."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np

from hybridasr.align.alignments import iter_alignment_file
from hybridasr.chain.lattice_supervision import is_lattice_dir, iter_dir_lattices, phone_lattice
from hybridasr.decode.lattice_best_path import best_path
from hybridasr.kaldi.lattice import read_lattices
from hybridasr.kaldi.transition_model import read_transition_model


def _num_paths(lat) -> int:
    """Paths from the start to a final state (a CompactLattice is acyclic)."""
    order = lat.topological_order()
    count = {lat.start: 1}
    total = 0
    for s in order:
        n = count.get(s, 0)
        for a in lat.arcs[s]:
            count[a.next] = count.get(a.next, 0) + n
        if s in lat.finals:
            total += n
    return total


def test_lattices_of_the_training_graphs(kaldi_digits_copy, repo_dir, env_with_path):
    d = kaldi_digits_copy
    run = lambda *a: subprocess.run([str(repo_dir / "steps/align_si.sh"), *a], cwd=d,  # noqa
                                    env=env_with_path, capture_output=True, text=True,
                                    timeout=300)
    p = run("--nj", "2", "--generate-lats", "true", "data/train", "data/lang", "exp/mono_ali",
            "exp/mono_lats")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "lattices of the training graphs (beams 20)" in p.stdout
    assert "aligned 120 of 120 utterances" in p.stdout
    lats = d / "exp/mono_lats"
    assert sorted(x.name for x in lats.glob("*.gz")) == ["lat.1.gz", "lat.2.gz"]
    assert (lats / "num_jobs").read_text().strip() == "2" and is_lattice_dir(str(lats))

    tm = read_transition_model(str(lats / "final.mdl"))
    kaldi_ali = {}
    for f in sorted((d / "exp/mono_ali").glob("ali.*.gz")):
        kaldi_ali.update(iter_alignment_file(str(f)))
    seen, same, several = 0, 0, 0
    for n in (1, 2):
        for utt, lat in read_lattices(f"ark:gunzip -c {lats}/lat.{n}.gz|"):
            seen += 1
            bp = best_path(lat, acoustic_scale=0.1)
            assert bp is not None and len(bp.tids) == len(kaldi_ali[utt]), utt
            same += np.array_equal(np.asarray(bp.tids), kaldi_ali[utt])
            several += _num_paths(lat) > 1
            plat = phone_lattice(lat, tm, utt)  # the chain numerator's first step
            assert plat.times.max() == len(kaldi_ali[utt])
    assert seen == 120
    # the best path is Kaldi's Viterbi alignment (align_si.sh's, the same graph and scales)
    assert same >= 118, same
    # the beam keeps alternatives: where the optional silences go, determinized on phones only
    assert several >= 100, several

    # --word-determinize=true (a decoder's lattices) keeps one path of the one transcript
    job = lats / "split_check"
    job.mkdir()
    loglikes = job / "ll.ark"
    subprocess.run(["gmm_compute_likes.py", f"--feature-pipeline={lats}", str(lats / "final.mdl"),
                    "data/train/split2/1", f"ark:{loglikes}"], cwd=d, env=env_with_path,
                   check=True, capture_output=True)
    for det, want_one in (("true", True), ("false", False)):
        out = job / f"lat_{det}.ark"
        q = subprocess.run(["latgen_align_mapped.py", f"--word-determinize={det}",
                            str(lats / "tree"), str(lats / "final.mdl"), "data/lang",
                            f"ark:{loglikes}", "ark:data/train/split2/1/text", f"ark:{out}"],
                           cwd=d, env=env_with_path, capture_output=True, text=True, timeout=120)
        assert q.returncode == 0, q.stderr[-2000:]
        paths = [_num_paths(lat) for _, lat in read_lattices(f"ark:{out}")]
        assert paths and (all(x == 1 for x in paths) if want_one else max(paths) > 1)

    # the chain numerator reads the dir (Kaldi's lattice dir: lat.*.gz, final.mdl, num_jobs)
    got = {u for _, u, _ in iter_dir_lattices(str(lats), set(kaldi_ali))}
    assert got == set(kaldi_ali)

    # a GMM dir whose final.mdl is a symbolic link (Kaldi's final.mdl -> 40.mdl): read through
    linked = d / "exp/mono_linked"
    linked.mkdir()
    shutil.copyfile(d / "exp/mono_ali/final.mdl", linked / "40.mdl")
    os.symlink("40.mdl", linked / "final.mdl")
    for f in ("tree", "phones.txt", "cmvn_opts"):
        if (d / "exp/mono_ali" / f).exists():
            shutil.copyfile(d / "exp/mono_ali" / f, linked / f)
    p = run("--nj", "1", "--generate-lats", "true", "data/train", "data/lang", str(linked),
            "exp/lats_linked")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "aligned 120 of 120 utterances" in p.stdout
    assert not (d / "exp/lats_linked/final.mdl").is_symlink()
    assert (d / "exp/lats_linked/final.mdl").read_bytes() == (linked / "40.mdl").read_bytes()

    # unknown words: normalised (as the toolkit's aligners), or the OOV word as Kaldi's
    # sym2int.pl --map-oov (--normalize-unknown false: as a Kaldi GMM's own alignment had them)
    text = (d / "data/train/text").read_text().splitlines()
    (d / "data/train/text").write_text("\n".join(
        [f"{ln.split()[0]} {ln.split()[1].upper()}," for ln in text[:3]] + text[3:]) + "\n")
    import json

    for norm, counted in (("true", "normalized_words"), ("false", "oov_words")):
        p = run("--nj", "1", "--generate-lats", "true", "--normalize-unknown", norm,
                "data/train", "data/lang", "exp/mono_ali", f"exp/lats_{norm}")
        assert p.returncode == 0, p.stderr[-3000:]
        rep = json.loads((d / f"exp/lats_{norm}/log/align_report.1.json").read_text())
        other = "oov_words" if counted == "normalized_words" else "normalized_words"
        assert rep[counted] == 3 and rep[other] == 0, rep


def _best_paths_equal(lat_dir, kaldi_ali) -> tuple:
    """(lattices, best paths equal to Kaldi's alignment, frames equal / frames)."""
    n = same = agree = frames = 0
    for f in sorted(lat_dir.glob("lat.*.gz")):
        for utt, lat in read_lattices(f"ark:gunzip -c {f}|"):
            tids, ref = np.asarray(best_path(lat, acoustic_scale=0.1).tids), kaldi_ali[utt]
            n += 1
            same += np.array_equal(tids, ref)
            agree += int((tids == ref).sum()) if len(tids) == len(ref) else 0
            frames += len(ref)
    return n, same, agree / frames


def test_lattices_of_a_sat_gmm_with_its_transforms(shared_dir, repo_dir, env_with_path, tmp_path):
    """kaldi_hindi_sat's SAT GMM (exp/tri3b_ali: LDA+MLLT, trans.* of its 10 speakers):
    --transform-dir applies each speaker's fMLLR transform after the GMM's pipeline, as Kaldi's
    align_fmllr_lats.sh's lattices; every best path is then the alignment Kaldi made with the same
    transforms, where without them (speaker-independent features in the SAT model) few are."""
    hindi = shared_dir / "data" / "kaldi_hindi_sat"
    gmm = hindi / "exp/tri3b_ali"
    data = tmp_path / "data/train"
    data.mkdir(parents=True)
    for f in (hindi / "data/train").iterdir():
        if f.is_file():
            (data / f.name).write_text(f.read_text().replace(" mfcc/", f" {hindi}/mfcc/"))
    kaldi_ali = {}
    for f in sorted(gmm.glob("ali.*.gz")):
        kaldi_ali.update(iter_alignment_file(str(f)))
    got = {}
    for name, opts in (("fmllr", ["--transform-dir", str(gmm)]), ("si", [])):
        p = subprocess.run([str(repo_dir / "steps/align_si.sh"), "--nj", "2", "--generate-lats",
                            "true", "--normalize-unknown", "false", *opts, "data/train",
                            str(hindi / "data/lang"), str(gmm), f"exp/lats_{name}"],
                           cwd=tmp_path, env=env_with_path, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        assert "aligned 100 of 100 utterances" in p.stdout
        assert (f"fMLLR transforms of {gmm}" in p.stdout) == bool(opts)
        got[name] = _best_paths_equal(tmp_path / f"exp/lats_{name}", kaldi_ali)
    n, same, frames = got["fmllr"]
    assert n == 100 and same >= 98 and frames > 0.99, got
    n, same, frames = got["si"]
    assert n == 100 and same <= 20 and frames < 0.95, got

    # --check-only: whether a data dir's features fit a GMM (run.sh --chain true asks first)
    check = lambda mdl, *o: subprocess.run(  # noqa: E731
        ["gmm_compute_likes.py", "--check-only", *o, str(mdl), "data/train", "ark:/dev/null"],
        cwd=tmp_path, env=env_with_path, capture_output=True, text=True, timeout=120)
    p = check(gmm / "final.mdl", f"--feature-pipeline={gmm}", f"--transform-dir={gmm}")
    assert p.returncode == 0 and "features of dim 40 fit" in p.stdout, p.stderr[-2000:]
    p = check(gmm / "final.mdl")  # (deltas of 13 MFCCs: 39, not the LDA's 40)
    assert p.returncode != 0 and "have dim 39" in p.stderr and "expects 40" in p.stderr
    p = check(gmm / "final.mdl", f"--transform-dir={gmm}")
    assert p.returncode != 0 and "--transform-dir needs --feature-pipeline" in p.stderr
