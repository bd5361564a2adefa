"""steps/nnet/align.sh end to end on kaldi_digits with a network trained for one epoch: a
Kaldi alignment dir (binary ali.JOB.gz that kaldiio and our reader read, final.mdl, tree,
num_jobs, logs) that steps/import_ali.sh accepts, and compare_alignments.py's figures."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess

import kaldiio
import numpy as np
import pytest

from hybridasr.align.alignments import iter_alignment_dir
from train_helpers import load_pybin, make_tr_cv


def _sh(cmd, env, cwd):
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def nnet_dir(tmp_path_factory, kaldi_digits):
    root = tmp_path_factory.mktemp("align")
    tr, cv, ali = make_tr_cv(kaldi_digits, root)
    exp = root / "exp_mlp"
    assert load_pybin("train").main([
        "--model=mlp", "--num-layers=2", "--hidden-size=64", "--splice=3",
        "--seq-ordering=frame_shuffle", "--max-frames=256", "--randomizer-size=100000",
        "--num-workers=0", "--learning-rate=0.004", "--max-iters=1", "--progress-every=0",
        "--num-threads=1", str(tr), str(cv), str(ali), str(ali), str(exp)]) == 0
    # what steps/nnet/train.sh adds around train.py
    shutil.copy(kaldi_digits / "exp/mono_ali/final.mdl", exp / "final.mdl")
    shutil.copy(kaldi_digits / "exp/mono_ali/tree", exp / "tree")
    if not (exp / "ali_train_pdf.counts").exists():
        shutil.copy(ali / "pdf_counts", exp / "ali_train_pdf.counts")
    data = root / "data_all"  # feats.scp + utt2spk from make_tr_cv; add what alignment needs
    for name in ("text", "spk2utt"):
        shutil.copy(kaldi_digits / "data/train" / name, data / name)
    with open(kaldi_digits / "data/train/cmvn.scp") as f, open(data / "cmvn.scp", "w") as out:
        for line in f:
            spk, path = line.split()
            out.write(f"{spk} {kaldi_digits / path}\n")
    return exp, data


def test_align_sh_writes_a_kaldi_alignment_dir(nnet_dir, kaldi_digits, repo_dir,
                                                env_with_path, tmp_path):
    exp, data = nnet_dir
    ali = tmp_path / "exp/mlp_ali"
    p = _sh(f"{repo_dir}/steps/nnet/align.sh --nj 2 {data} {kaldi_digits}/data/lang {exp} {ali}",
            env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    assert "aligned 120 of 120 utterances" in p.stdout
    assert (ali / "num_jobs").read_text().strip() == "2"
    for name in ("final.mdl", "tree", "phones.txt"):
        assert (ali / name).is_file() and not (ali / name).is_symlink()
    # binary Kaldi archives: key, space, \0B; kaldiio and our reader agree
    ours = {u: a for _, u, a in iter_alignment_dir(str(ali))}
    assert len(ours) == 120
    for job in (1, 2):
        raw = gzip.open(ali / f"ali.{job}.gz").read()
        assert raw.split(b" ", 1)[1][:2] == b"\0B"
        with gzip.open(ali / f"ali.{job}.gz") as f:
            for utt, vec in kaldiio.load_ark(f):
                assert np.array_equal(vec, ours[utt])
    rep = [json.loads((ali / f"log/align_report.{j}.json").read_text()) for j in (1, 2)]
    assert sum(r["aligned"] for r in rep) == 120 and sum(r["num_failed"] for r in rep) == 0
    # steps/import_ali.sh takes it as it takes Kaldi's
    p = _sh(f"{repo_dir}/steps/import_ali.sh {ali} {data} {tmp_path}/imported", env_with_path,
            tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    imp = json.loads((tmp_path / "imported/import_report.json").read_text())
    assert imp["utterances_imported"] == 120 and imp["exact_length"] == 120
    # agreement with the GMM alignment
    out = tmp_path / "compare.json"
    p = _sh(f"compare_alignments.py --data-dir {data} {kaldi_digits}/exp/mono_ali {ali} {out}",
            env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    cmp = json.loads(out.read_text())
    assert cmp["utterances"] == 120 and cmp["frames"] == 4485
    assert cmp["num_only_in_first"] == cmp["num_only_in_second"] == 0
    assert 30 < cmp["phone_agreement"] <= 100 and cmp["pdf_agreement"] <= cmp["phone_agreement"]
    assert len(cmp["per_utterance"]) == 120


def test_align_sh_input_checks(nnet_dir, kaldi_digits, repo_dir, env_with_path, tmp_path):
    exp, data = nnet_dir
    p = _sh(f"{repo_dir}/steps/nnet/align.sh {data} {kaldi_digits}/data/lang", env_with_path,
            tmp_path)
    assert p.returncode != 0 and "Usage:" in p.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("final.nnet", "final.mdl", "ali_train_pdf.counts"):
        shutil.copy(exp / name, bare / name)
    p = _sh(f"{repo_dir}/steps/nnet/align.sh {data} {kaldi_digits}/data/lang {bare} "
            f"{tmp_path}/ali", env_with_path, tmp_path)
    assert p.returncode != 0 and f"missing file {bare}/tree" in p.stderr


def test_compare_identical_dirs(kaldi_digits, env_with_path, tmp_path):
    p = _sh(f"compare_alignments.py --per-utterance=false {kaldi_digits}/exp/mono_ali "
            f"{kaldi_digits}/exp/mono_ali", env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["phone_agreement"] == out["pdf_agreement"] == 100.0
    assert out["utterances"] == 120 and "per_utterance" not in out


STAND_IN = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STANDIN_RECORD/$(basename "$0")"
"""


def test_align_sh_passes_only_the_options_given(tmp_path, repo_dir, kaldi_digits,
                                                env_with_path):
    """steps/nnet/align.sh leaves every default to forward.py and align_mapped.py (stand-ins
    record their command lines): an option reaches them only when it was given."""
    bin_dir, rec = tmp_path / "bin", tmp_path / "rec"
    bin_dir.mkdir()
    rec.mkdir()
    for prog in ("forward.py", "align_mapped.py"):
        (bin_dir / prog).write_text(STAND_IN)
        (bin_dir / prog).chmod(0o755)
    data, exp = tmp_path / "data", tmp_path / "exp"
    for d in (data, exp):
        d.mkdir()
    for name in ("feats.scp", "utt2spk", "spk2utt", "text"):
        (data / name).write_text((kaldi_digits / "data/test" / name).read_text())
    for name in ("final.nnet", "final.mdl", "tree", "ali_train_pdf.counts"):
        (exp / name).write_text("")
    env = dict(env_with_path, STANDIN_RECORD=str(rec),
               PATH=f"{bin_dir}:{env_with_path['PATH']}")

    def align(*opts):
        for f in rec.iterdir():
            f.unlink()
        p = subprocess.run([str(repo_dir / "steps/nnet/align.sh"), "--nj", "1", *opts,
                            str(data), str(kaldi_digits / "data/lang"), str(exp),
                            str(tmp_path / "ali")],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        return [[a for a in (rec / prog).read_text().splitlines()
                 if a.startswith("--") and not a.startswith(("--class-frame-counts=",
                                                             "--transition-model=", "--report="))]
                for prog in ("forward.py", "align_mapped.py")]

    assert align() == [[], []]
    assert align("--beam", "12", "--retry-beam", "30", "--acoustic-scale", "0.2",
                 "--transition-scale", "0.5", "--self-loop-scale", "0.3", "--prior-scale",
                 "0.5", "--device", "cpu") == [
        ["--prior-scale=0.5", "--device=cpu"],
        ["--beam=12", "--retry-beam=30", "--acoustic-scale=0.2", "--transition-scale=0.5",
         "--self-loop-scale=0.3"]]


def test_realign_round_sh_input_checks(nnet_dir, kaldi_digits, repo_dir, env_with_path,
                                       tmp_path):
    exp, data = nnet_dir
    step = repo_dir / "steps/nnet/realign_round.sh"
    dirs = f"{data} {data} {data} {kaldi_digits}/data/lang {exp} {tmp_path}/ali {tmp_path}/re"
    p = _sh(f"{step} {data} {kaldi_digits}/data/lang {exp}", env_with_path, tmp_path)
    assert p.returncode != 0 and "Usage:" in p.stderr and "e.g.:" in p.stderr
    p = _sh(f"{step} --init later {dirs}", env_with_path, tmp_path)
    assert p.returncode != 0 and "--init is previous or scratch, not 'later'" in p.stderr
    p = _sh(f"{step} --gmm-ali {tmp_path}/nowhere {dirs}", env_with_path, tmp_path)
    assert p.returncode != 0 and f"--gmm-ali {tmp_path}/nowhere is not a directory" in p.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    p = _sh(f"{step} {data} {data} {data} {kaldi_digits}/data/lang {bare} {tmp_path}/ali "
            f"{tmp_path}/re", env_with_path, tmp_path)
    assert p.returncode != 0 and f"missing file {bare}/final.nnet" in p.stderr
    assert not (tmp_path / "ali").exists() and not (tmp_path / "re").exists()


def test_align_sh_on_a_one_speaker_dir_runs_one_job(nnet_dir, kaldi_digits, repo_dir,
                                                    env_with_path, tmp_path):
    """A dir of one speaker (Kaldi's yesno: every utterance 'global'): --nj 2 cannot be split
    by speaker, so align.sh runs one job and says so (utils/jobs_for_speakers.sh), instead of
    split_data.sh's refusal."""
    exp, data = nnet_dir
    one = tmp_path / "one_speaker"
    shutil.copytree(data, one)
    utts = [ln.split()[0] for ln in (data / "utt2spk").read_text().splitlines()]
    (one / "utt2spk").write_text("".join(f"{u} global\n" for u in utts))
    (one / "spk2utt").write_text("global " + " ".join(utts) + "\n")
    first_stats = (data / "cmvn.scp").read_text().splitlines()[0].split()[1]
    (one / "cmvn.scp").write_text(f"global {first_stats}\n")
    ali = tmp_path / "exp/mlp_ali"
    p = _sh(f"{repo_dir}/steps/nnet/align.sh --nj 2 {one} {kaldi_digits}/data/lang {exp} {ali}",
            env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    assert f"{one} has only 1 speaker(s): using --nj 1 instead of 2" in p.stderr
    assert (ali / "num_jobs").read_text().strip() == "1"
    assert len({x[1] for x in iter_alignment_dir(str(ali))}) == len(utts) == 120


@pytest.mark.parametrize("nj,spk2utt,out,err", [
    ("4", "a u1\nb u2\n", "2", "has only 2 speaker(s): using --nj 2 instead of 4"),
    ("2", "a u1\nb u2\nc u3\n", "2", ""),
    ("0", "a u1\n", None, "--nj must be a positive integer, got '0'"),
    ("2", None, None, "spk2utt is missing or empty")])
def test_jobs_for_speakers(tmp_path, repo_dir, nj, spk2utt, out, err):
    if spk2utt is not None:
        (tmp_path / "spk2utt").write_text(spk2utt)
    p = subprocess.run([str(repo_dir / "utils/jobs_for_speakers.sh"), "caller.sh",
                        str(tmp_path), nj], capture_output=True, text=True, timeout=30)
    assert (p.returncode == 0) == (out is not None)
    assert p.stdout.strip() == (out or "")
    assert err in p.stderr and (not err or p.stderr.startswith("caller.sh: "))


def test_check_phones_compatible(tmp_path, repo_dir, kaldi_digits):
    """utils/lang/check_phones_compatible.sh, as Kaldi's: kaldi_digits' phones.txt against
    itself with more disambiguation symbols (a lang dir of a larger lexicon) passes; a phone
    renumbered fails naming both files; one table missing passes, both missing fails."""
    tool = str(repo_dir / "utils/lang/check_phones_compatible.sh")
    phones = (kaldi_digits / "data/lang/phones.txt").read_text()
    assert "#0 " in phones
    n = max(int(ln.split()[1]) for ln in phones.splitlines())
    more = tmp_path / "more.txt"
    more.write_text(phones + f"#{n} {n + 1}\n#{n + 1} {n + 2}\n")
    lines = phones.splitlines()
    swapped = tmp_path / "swapped.txt"
    a, b = lines[1].split()[0], lines[2].split()[0]
    swapped.write_text("\n".join([lines[0], f"{b} 1", f"{a} 2", *lines[3:]]) + "\n")

    def check(x, y):
        return subprocess.run([tool, str(x), str(y)], capture_output=True, text=True,
                              timeout=30)
    assert check(kaldi_digits / "data/lang/phones.txt", more).returncode == 0
    p = check(kaldi_digits / "data/lang/phones.txt", swapped)
    assert p.returncode == 1 and "swapped.txt do not match" in p.stderr and "phone " in p.stderr
    assert check(more, tmp_path / "absent.txt").returncode == 0
    p = check(tmp_path / "absent.txt", tmp_path / "absent2.txt")
    assert p.returncode == 1 and "neither" in p.stderr
