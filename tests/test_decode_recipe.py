"""steps/nnet/decode.sh run from a Kaldi-style recipe dir (steps/ and utils/ symlinks, path.sh,
relative paths, ``--nj 2``, ``--cmd run.pl``), on kaldi_digits' real graph and transition model.

The network is replaced by a stand-in ``forward.py`` (first on PATH) that records its argv and
writes pseudo log-likelihoods made from Kaldi's own alignments of data/train, so the whole
script runs without a trained model: the embedded path (forward.py -> decode_faster_mapped.py
-> steps/score.sh) must give WER 0 with Kaldi's wer_* format; the Kaldi path is checked with
stand-ins for latgen-faster-mapped and the lattice tools that record their argv, read the
archive from stdin (kaldiio) and decode it, proving the pipe and nnet1's exact options.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kaldiio
import numpy as np
import pytest

from hybridasr.decode.pseudo_loglikes import pseudo_loglikes
from hybridasr.kaldi.lattice import read_lattices
from hybridasr.kaldi.io.table import read_text_archive
from hybridasr.kaldi.io.table_writer import ArkScpWriter
from hybridasr.kaldi.transition_model import read_transition_model

# A stand-in for every external program: records its argv (one JSON file per call), then acts.
STAND_IN = r'''#!{python}
import json, os, subprocess, sys
sys.path.insert(0, {repo!r})
import kaldiio
import numpy as np

prog = os.path.basename(sys.argv[0])
args = sys.argv[1:]
rec = os.environ["STANDIN_RECORD"]
with open(os.path.join(rec, "%s.%d.json" % (prog, os.getpid())), "w") as f:
    json.dump({{"prog": prog, "argv": args, "cwd": os.getcwd()}}, f)
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--"))
pos = [a for a in args if not a.startswith("--")]


def open_out(wspec):
    """ark:-, ark,t:file or ark:|cmd -> (file, process or None)."""
    target = wspec.split(":", 1)[1]
    if target == "-":
        return sys.stdout, None
    if target.startswith("|"):
        p = subprocess.Popen(target[1:], shell=True, stdin=subprocess.PIPE, text=True)
        return p.stdin, p
    return open(target, "w"), None


def read_in(rspec):
    target = rspec.split(":", 1)[1]
    if target == "-":
        return sys.stdin.read()
    if target.endswith("|"):
        return subprocess.run(target[:-1], shell=True, capture_output=True, text=True,
                              check=True).stdout
    return open(target).read()


def finish(f, p):
    if p is not None:
        f.close()
        sys.exit(p.wait())
    f.flush()


if prog == "forward.py":
    if os.environ.get("STANDIN_FORWARD_FAIL") and pos[1].endswith("/2"):
        sys.exit("forward.py: ERROR (stand-in): job 2 is told to fail")
    src = dict(kaldiio.load_scp(os.environ["STANDIN_LOGLIKES"]))
    keys = [line.split()[0] for line in open(os.path.join(pos[1], "feats.scp"))]
    with kaldiio.WriteHelper(pos[2]) as w:
        for k in keys:
            w[k] = src[k]
elif prog == "latgen-faster-mapped":
    # the "lattice" written here is the best path's word ids as text (for the stand-ins below)
    from hybridasr.decode.decoder import DecodeOptions, MappedDecoder
    from hybridasr.kaldi.fst import read_fst
    from hybridasr.kaldi.transition_model import read_transition_model

    model, fst, rspec, wspec = pos
    assert rspec == "ark:-", rspec
    tm = read_transition_model(model)
    dec = MappedDecoder(read_fst(fst), tm.tid2pdf, tm.num_pdfs,
                        DecodeOptions(beam=float(opts["beam"]),
                                      max_active=int(opts["max-active"]),
                                      min_active=int(opts["min-active"])))
    n = 0
    f, p = open_out(wspec)
    for key, mat in kaldiio.load_ark(sys.stdin.buffer):
        r = dec.decode(mat, float(opts["acoustic-scale"]), key)
        f.write(key + " " + "".join("%d " % w for w in r.words) + "\n")
        n += 1
    print("latgen-faster-mapped (stand-in): read %d matrices from stdin" % n, file=sys.stderr)
    finish(f, p)
elif prog in ("lattice-scale", "lattice-add-penalty", "lattice-best-path"):
    text = read_in(pos[0])
    f, p = open_out(pos[1])
    f.write(text)
    finish(f, p)
else:
    sys.exit("stand-in: unknown program " + prog)
'''


@pytest.fixture(scope="module")
def pseudo_train(kaldi_digits, tmp_path_factory):
    """data/train's pseudo log-likelihoods (scp) from Kaldi's alignments, and the keys."""
    tm = read_transition_model(str(kaldi_digits / "exp/mono_ali/final.mdl"))
    out = tmp_path_factory.mktemp("pseudo")
    with kaldiio.ReadHelper(f"ark:gunzip -c {kaldi_digits}/exp/mono_ali/ali.1.gz |") as r:
        alis = {k: np.asarray(a) for k, a in r}
    with ArkScpWriter(str(out / "ll.ark"), str(out / "ll.scp")) as w:
        for k in sorted(alis):
            w.write(k, pseudo_loglikes(alis[k], tm.tid2pdf, tm.num_pdfs))
    return out / "ll.scp", sorted(alis)


def make_recipe(tmp_path: Path, repo_dir: Path, kaldi_digits: Path, stand_ins, keys):
    """An s5-style dir: steps/utils symlinks, a path.sh putting the stand-ins first, a copy of
    data/train (a subset of speakers), exp/dnn with final.nnet/final.mdl/counts."""
    s5 = tmp_path / "s5"
    s5.mkdir()
    (s5 / "steps").symlink_to(repo_dir / "steps")
    (s5 / "utils").symlink_to(repo_dir / "utils")
    bin_dir = tmp_path / "stand_ins"
    bin_dir.mkdir()
    script = STAND_IN.format(python=sys.executable, repo=str(repo_dir))
    for prog in stand_ins:
        (bin_dir / prog).write_text(script)
        (bin_dir / prog).chmod(0o755)
    (s5 / "path.sh").write_text(f". {repo_dir}/path.sh\nexport PATH={bin_dir}:$PATH\n")
    src = kaldi_digits / "data/train"
    data = s5 / "data/train"
    data.mkdir(parents=True)
    keep = set(keys)
    for name in ("text", "feats.scp", "utt2spk"):
        lines = (src / name).read_text().splitlines(True)
        (data / name).write_text("".join(x for x in lines if x.split()[0] in keep))
    spk2utt = {}
    for line in (data / "utt2spk").read_text().splitlines():
        utt, spk = line.split()
        spk2utt.setdefault(spk, []).append(utt)
    (data / "spk2utt").write_text("".join(f"{s} {' '.join(u)}\n" for s, u in spk2utt.items()))
    exp = s5 / "exp/dnn"
    exp.mkdir(parents=True)
    (exp / "final.nnet").write_bytes(b"stand-in network")
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    (exp / "ali_train_pdf.counts").write_text("[ " + " ".join(["10"] * 70) + " ]\n")
    record = tmp_path / "record"
    record.mkdir()
    return s5, record


def records(record: Path, prog: str):
    out = [json.loads(p.read_text()) for p in sorted(record.glob(f"{prog}.*.json"))]
    return sorted(out, key=lambda r: r["argv"])


def run_decode(s5, record, env, ll_scp, graph, *opts, **extra_env):
    e = dict(env, STANDIN_RECORD=str(record), STANDIN_LOGLIKES=str(ll_scp), **extra_env)
    cmd = ["steps/nnet/decode.sh", "--nj", "2", "--cmd", "run.pl", *opts, str(graph),
           "data/train", "exp/dnn/decode_train"]
    return subprocess.run(cmd, cwd=s5, env=e, capture_output=True, text=True, timeout=300)


def _spk_keys(keys, speakers):
    return [k for k in keys if k.rsplit("_", 1)[0] in speakers]


# --prior-scale only when given: forward.py's default is the one
FORWARD_OPTS = ["--class-frame-counts=exp/dnn/ali_train_pdf.counts",
                "--transition-model=exp/dnn/final.mdl", "--device=cpu", "exp/dnn/final.nnet"]


def test_embedded_decode_from_recipe_dir(tmp_path, repo_dir, kaldi_digits, env_with_path,
                                         pseudo_train):
    ll_scp, keys = pseudo_train
    keys = _spk_keys(keys, {"jackson_0", "nicolas_1"})
    assert len(keys) == 20
    s5, record = make_recipe(tmp_path, repo_dir, kaldi_digits, ["forward.py"], keys)
    graph = kaldi_digits / "exp/mono/graph"
    p = run_decode(s5, record, env_with_path, ll_scp, graph, "--scoring-opts",
                   "--min-lmwt 9 --max-lmwt 11")
    assert p.returncode == 0, p.stdout + p.stderr
    dec = s5 / "exp/dnn/decode_train"
    fwd = records(record, "forward.py")
    assert [r["argv"] for r in fwd] == [
        FORWARD_OPTS + [f"data/train/split2/{j}",
                        f"ark,scp:exp/dnn/decode_train/loglikes.{j}.ark,"
                        f"exp/dnn/decode_train/loglikes.{j}.scp"] for j in (1, 2)]
    assert all(r["cwd"] == str(s5) for r in fwd)
    assert (dec / "num_jobs").read_text() == "2\n"
    for j in (1, 2):
        assert (dec / f"log/forward.{j}.log").exists() and (dec / f"log/decode.{j}.log").exists()
    assert not list(dec.glob("hyp.*"))  # no 1-best pass: the lattices are the decoding
    for lmwt in (9, 10, 11):  # each (LM weight, word insertion penalty) of score.sh's default
        for wip in ("0.0", "0.5", "1.0"):
            wer = (dec / f"wer_{lmwt}_{wip}").read_text().splitlines()
            assert wer[-3:] == ["%WER 0.00 [ 0 / 20, 0 ins, 0 del, 0 sub ]",
                                "%SER 0.00 [ 0 / 20 ]", "Scored 20 sentences, 0 not present in hyp."]
            assert len(read_text_archive(str(dec / f"scoring/penalty_{wip}/{lmwt}.tra"))) == 20
    assert len(list(dec.glob("wer_*"))) == 9
    # scored on the lattices decode.sh made from the log-likelihoods (the toolkit's C++ search)
    assert sorted(x.name for x in dec.glob("lat.*.gz")) == ["lat.1.gz", "lat.2.gz"]
    assert sorted(k for k, _ in read_lattices(f"ark:gunzip -c {dec}/lat.*.gz|")) == keys
    assert not (dec / "log/latgen.1.log").exists() and (dec / "decode_summary.json").exists()
    best = subprocess.run(f"grep WER {dec}/wer_* | utils/best_wer.sh", shell=True, cwd=s5,
                          env=env_with_path, capture_output=True, text=True)
    assert re.fullmatch(r".*/wer_(9|10|11)_(0\.0|0\.5|1\.0):%WER 0\.00 \[ 0 / 20, 0 ins, 0 del, 0 sub \]\n",
                        best.stdout), best.stdout


def test_kaldi_path_pipes_like_nnet1(tmp_path, repo_dir, kaldi_digits, env_with_path,
                                     pseudo_train):
    ll_scp, keys = pseudo_train
    keys = _spk_keys(keys, {"jackson_2", "nicolas_3", "theo_0"})
    progs = ["forward.py", "latgen-faster-mapped", "lattice-scale", "lattice-add-penalty",
             "lattice-best-path"]
    s5, record = make_recipe(tmp_path, repo_dir, kaldi_digits, progs, keys)
    graph = kaldi_digits / "exp/mono/graph"
    p = run_decode(s5, record, env_with_path, ll_scp, graph, "--scoring-opts",
                   "--min-lmwt 10 --max-lmwt 11")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kaldi decoder, 2 jobs" in p.stdout
    dec = s5 / "exp/dnn/decode_train"
    # forward.py writes the archive to stdout, exactly the nnet-forward half of nnet1's pipe
    assert [r["argv"] for r in records(record, "forward.py")] == [
        FORWARD_OPTS + [f"data/train/split2/{j}", "ark:-"] for j in (1, 2)]
    # latgen-faster-mapped: Kaldi nnet1 decode.sh's options, in its order, reading ark:-
    # (--max-mem only when given: Kaldi's default, 50000000, is nnet1's)
    lat = records(record, "latgen-faster-mapped")
    assert [r["argv"] for r in lat] == [
        ["--min-active=200", "--max-active=7000", "--beam=13.0",
         "--lattice-beam=8.0", "--acoustic-scale=0.10", "--allow-partial=true",
         f"--word-symbol-table={graph}/words.txt", "exp/dnn/final.mdl", f"{graph}/HCLG.fst",
         "ark:-", f"ark:|gzip -c > exp/dnn/decode_train/lat.{j}.gz"] for j in (1, 2)]
    logs = "".join((dec / f"log/decode.{j}.log").read_text() for j in (1, 2))
    n_read = [int(n) for n in re.findall(r"read (\d+) matrices from stdin", logs)]
    assert sorted(n_read) != [] and sum(n_read) == len(keys) == 30
    assert sorted(dec.glob("lat.*.gz")) == [dec / "lat.1.gz", dec / "lat.2.gz"]
    assert not list(dec.glob("loglikes.*")) and not list(dec.glob("hyp.*"))
    # scoring through Kaldi's lattice tools (stand-ins), one pipe per LM weight
    scale = records(record, "lattice-scale")
    assert sorted(r["argv"][0] for r in scale) == ["--inv-acoustic-scale=10"] * 3 + \
        ["--inv-acoustic-scale=11"] * 3  # and each of the 3 word insertion penalties
    assert sorted(r["argv"][0] for r in records(record, "lattice-add-penalty")) == \
        ["--word-ins-penalty=0.0"] * 2 + ["--word-ins-penalty=0.5"] * 2 + \
        ["--word-ins-penalty=1.0"] * 2
    assert scale[0]["argv"][1:] == [f"ark:gunzip -c {dec.relative_to(s5)}/lat.*.gz|", "ark:-"]
    best = records(record, "lattice-best-path")
    assert best[0]["argv"] == [f"--word-symbol-table={graph}/words.txt", "ark:-",
                               "ark,t:exp/dnn/decode_train/scoring/penalty_0.0/10.tra"]
    for lmwt in (10, 11):
        assert (dec / f"wer_{lmwt}_0.5").read_text().splitlines()[-3:] == [
            "%WER 0.00 [ 0 / 30, 0 ins, 0 del, 0 sub ]", "%SER 0.00 [ 0 / 30 ]",
            "Scored 30 sentences, 0 not present in hyp."]


def test_failing_job_names_its_log(tmp_path, repo_dir, kaldi_digits, env_with_path,
                                   pseudo_train):
    ll_scp, keys = pseudo_train
    keys = _spk_keys(keys, {"jackson_3", "nicolas_4"})
    for progs, log in ((["forward.py"], "forward"),
                       (["forward.py", "latgen-faster-mapped"], "decode")):
        sub = tmp_path / log
        sub.mkdir()
        s5, record = make_recipe(sub, repo_dir, kaldi_digits, progs, keys)
        p = run_decode(s5, record, env_with_path, ll_scp, kaldi_digits / "exp/mono/graph",
                       "--skip-scoring", "true", STANDIN_FORWARD_FAIL="1")
        assert p.returncode != 0
        failed = f"exp/dnn/decode_train/log/{log}.2.log"
        assert f"failed; see the log(s): {failed}\n" in p.stderr, p.stderr
        assert f"{failed}: forward.py: ERROR (stand-in): job 2 is told to fail" in p.stderr
        assert "job 2 is told to fail" in (s5 / failed).read_text()
        assert f"exp/dnn/decode_train/log/{log}.1.log" not in p.stderr.split("see the log")[1]


def test_bad_inputs_are_named(tmp_path, repo_dir, kaldi_digits, env_with_path, pseudo_train):
    ll_scp, keys = pseudo_train
    keys = _spk_keys(keys, {"theo_2"})
    s5, record = make_recipe(tmp_path, repo_dir, kaldi_digits, ["forward.py"], keys)
    graph = tmp_path / "graph"
    graph.mkdir()
    shutil.copy(kaldi_digits / "exp/mono/graph/words.txt", graph / "words.txt")
    p = run_decode(s5, record, env_with_path, ll_scp, graph)
    assert p.returncode != 0 and f"missing file {graph}/HCLG.fst" in p.stderr
    p = run_decode(s5, record, env_with_path, ll_scp, tmp_path / "no_such_graph")
    assert p.returncode != 0 and f"missing file {tmp_path}/no_such_graph/HCLG.fst" in p.stderr
    # a transition model with another number of pdfs than the graph was built for
    shutil.copy(kaldi_digits / "exp/mono/graph/HCLG.fst", graph / "HCLG.fst")
    (graph / "num_pdfs").write_text("71\n")
    p = run_decode(s5, record, env_with_path, ll_scp, graph, "--nj", "1")
    assert p.returncode != 0
    assert "failed; see the log(s): exp/dnn/decode_train/log/decode.1.log" in p.stderr
    assert "built for a model with 71 pdfs" in p.stderr
    assert "Traceback" not in (s5 / "exp/dnn/decode_train/log/decode.1.log").read_text()
    assert not records(record, "latgen-faster-mapped")
    assert os.path.exists(s5 / "exp/dnn/decode_train/loglikes.1.scp")
