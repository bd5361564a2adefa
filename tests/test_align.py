"""Alignment import on the real Kaldi dir kaldi_digits/exp/mono_ali, checked against values
derived independently: the lexicon and transcripts (phones must spell the words), Kaldi's own
logs (frame totals, analyze_alignments.log statistics), the feature matrices (kaldiio)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys

import kaldiio
import numpy as np
import pytest

from hybridasr.align.ali_tools import ali_to_phones, analyze_counts, show_alignments
from hybridasr.align.alignments import iter_alignment_dir
from hybridasr.align.counts import DISABLED_LOG_PRIOR, log_priors, read_counts
from hybridasr.align.importer import import_alignments
from hybridasr.align.length_tolerance import match_length, within_tolerance
from hybridasr.align.phones import phone_segments
from hybridasr.errors import FormatError
from hybridasr.kaldi.io.intvec import read_int_vector_scp, read_int_vectors
from hybridasr.kaldi.io.table_writer import IntVectorWriter
from hybridasr.kaldi.transition_model import (TransitionModel, read_transition_model,
                                              write_transition_model)


@pytest.fixture(scope="module")
def digits(kaldi_digits):
    return kaldi_digits


@pytest.fixture(scope="module")
def tm(digits):
    return read_transition_model(str(digits / "exp/mono_ali/final.mdl"))


@pytest.fixture(scope="module")
def alis(digits):
    return {utt: ali for _, utt, ali in iter_alignment_dir(str(digits / "exp/mono_ali"))}


@pytest.fixture(scope="module")
def phone_names(digits):
    return {int(i): s for s, i in (l.split() for l in open(digits / "data/lang/phones.txt"))}


@pytest.fixture(scope="module")
def imported(digits, tmp_path_factory):
    out = tmp_path_factory.mktemp("imp") / "targets"
    cwd = os.getcwd()
    os.chdir(digits)  # feats.scp paths are relative to the recipe dir
    try:
        report = import_alignments("exp/mono_ali", "data/train", str(out))
    finally:
        os.chdir(cwd)
    return out, report


def _pronunciations(digits):
    prons = {}
    for line in open(digits / "data/lang/phones/align_lexicon.txt"):
        w = line.split()
        prons.setdefault(w[0], []).append(w[2:])
    return prons


def test_phone_sequences_spell_the_transcripts(digits, tm, alis, phone_names):
    prons = _pronunciations(digits)
    silence = set(open(digits / "data/lang/phones/silence.txt").read().split())
    text = {l.split()[0]: l.split()[1:] for l in open(digits / "data/train/text")}
    assert set(text) == set(alis)
    for utt, ali in alis.items():
        segs = phone_segments(tm, ali, utt)
        assert sum(n for _, n in segs) == len(ali)
        names = [phone_names[p] for p, _ in segs if phone_names[p] not in silence]
        (word,) = text[utt]
        assert names in prons[word], (utt, names)


def test_per_frame_and_lengths_agree(digits, tm, alis, tmp_path):
    rspec = f"ark:gunzip -c {digits}/exp/mono_ali/ali.*.gz|"
    ali_to_phones(str(digits / "exp/mono_ali/final.mdl"), rspec, f"ark,t:{tmp_path}/seq")
    ali_to_phones(str(digits / "exp/mono_ali/final.mdl"), rspec, f"ark:{tmp_path}/pf",
                  per_frame=True)
    ali_to_phones(str(digits / "exp/mono_ali/final.mdl"), rspec, f"ark,t:{tmp_path}/len",
                  write_lengths=True)
    seq = dict(read_int_vectors(f"ark:{tmp_path}/seq"))
    per_frame = dict(read_int_vectors(f"ark:{tmp_path}/pf"))
    lengths = {l.split()[0]: [tuple(map(int, p.split())) for p in l.split(None, 1)[1].split(";")]
               for l in open(tmp_path / "len")}
    for utt, ali in alis.items():
        pf = per_frame[utt]
        assert len(pf) == len(ali)
        # independent: the phone of each frame straight from the tuple of its transition-id
        np.testing.assert_array_equal(
            pf, [tm.tuples[tm.transition_id_to_transition_state(t) - 1, 0] for t in ali])
        assert [p for p, _ in lengths[utt]] == seq[utt].tolist()
        assert np.repeat(*zip(*lengths[utt])).tolist() == pf.tolist()


def test_phone_statistics_match_kaldis_analyze_alignments_log(digits, tm, alis, phone_names):
    """exp/mono_ali/log/analyze_alignments.log (Kaldi's analyze_phone_length_stats.py on
    ali-to-phones --write-lengths): 'At utterance begin, sil accounts for 18.3% of phone
    occurrences, with duration (median, mean, 95-percentile) is (6,7.8,13) frames.' etc."""
    log_text = open(digits / "exp/mono_ali/log/analyze_alignments.log").read()
    assert "At utterance begin, sil accounts for 18.3%" in log_text
    assert "(6,7.8,13) frames" in log_text and "At utterance end, sil accounts for 7.5%" in log_text
    first, last = [], []
    for utt, ali in alis.items():
        segs = phone_segments(tm, ali, utt)
        first.append(segs[0])
        last.append(segs[-1])
    sil_begin = [n for p, n in first if phone_names[p] == "sil"]
    sil_end = [n for p, n in last if phone_names[p] == "sil"]
    assert round(100 * len(sil_begin) / len(alis), 1) == 18.3
    assert round(100 * len(sil_end) / len(alis), 1) == 7.5
    assert statistics.median(sil_begin) == 6 and round(statistics.mean(sil_begin), 1) == 7.8
    assert round(statistics.mean(sil_end), 1) == 8.6


def test_alignment_lengths_equal_feature_rows(digits, alis):
    feats = kaldiio.load_scp(str(digits / "data/train/feats.scp"))
    cwd = os.getcwd()
    os.chdir(digits)
    try:
        rows = {utt: feats[utt].shape[0] for utt in feats}
    finally:
        os.chdir(cwd)
    assert rows == {utt: len(a) for utt, a in alis.items()}


def test_import_outputs(imported, tm, alis, digits):
    out, report = imported
    assert report.utterances_imported == 120 and report.frames_imported == 4485
    assert report.exact_length == 120 and report.dropped_over_tolerance == 0
    targets = read_int_vector_scp(str(out / "targets.scp"))
    assert list(targets) == sorted(alis)
    for utt, ali in alis.items():
        assert targets[utt].dtype == np.int32
        # independent mapping: the tuple of the transition-state, self-loop or forward pdf
        tstates = [tm.transition_id_to_transition_state(t) for t in ali]
        np.testing.assert_array_equal(targets[utt], [tm.tuples[s - 1, 2] for s in tstates])
    theirs = dict(kaldiio.load_ark(str(out / "targets.ark")))
    assert set(theirs) == set(alis)
    counts = read_counts(str(out / "pdf_counts"))
    assert counts.sum() == 4485 and len(counts) == 70
    np.testing.assert_array_equal(counts, np.bincount(np.concatenate(list(targets.values())),
                                                      minlength=70))
    assert (out / "pdf_counts").read_text().startswith(" [ ")
    assert (out / "num_pdfs").read_text() == "70\n"
    for name in ("final.mdl", "tree", "phones.txt"):
        assert (out / name).read_bytes() == (digits / "exp/mono_ali" / name).read_bytes()
    rep = json.loads((out / "import_report.json").read_text())
    assert rep["utterances_imported"] == 120 and rep["features_without_alignment"] == 0
    assert "label_delay" not in rep  # the label delay is the trainer's, not the import's
    lines = (out / "target_lengths").read_text().splitlines()
    assert lines == [f"{u} {len(alis[u])}" for u in sorted(alis)]
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    assert oct((out / "targets.ark").stat().st_mode & 0o444) == oct(0o444)


def test_analyze_counts_tool_matches_import(imported, digits, tmp_path):
    out, _ = imported
    c = analyze_counts(f"scp:{out}/targets.scp", str(tmp_path / "c"), binary=False, counts_dim=70)
    np.testing.assert_array_equal(read_counts(str(tmp_path / "c")), c)
    np.testing.assert_array_equal(c, read_counts(str(out / "pdf_counts")))
    analyze_counts(f"scp:{out}/targets.scp", str(tmp_path / "b"), binary=True)
    assert (tmp_path / "b").read_bytes().startswith(b"\0BDV ")
    np.testing.assert_array_equal(read_counts(str(tmp_path / "b")), c)


def test_log_priors_like_kaldi_pdf_prior():
    counts = np.array([10.0, 30.0, 0.0, 60.0])
    lp = log_priors(counts)
    np.testing.assert_allclose(lp[[0, 1, 3]], np.log([0.1, 0.3, 0.6]), rtol=1e-6)
    assert lp[2] == np.float32(DISABLED_LOG_PRIOR) and lp[2] > 1e19
    assert log_priors(np.array([1.0, 1e12]), floor=1e-10)[0] == np.float32(DISABLED_LOG_PRIOR)


def test_show_alignments(digits, tmp_path):
    import io
    buf = io.StringIO()
    n = show_alignments(str(digits / "data/lang/phones.txt"), str(digits / "exp/mono_ali/final.mdl"),
                        f"ark:gunzip -c {digits}/exp/mono_ali/ali.1.gz|", out=buf)
    lines = buf.getvalue().split("\n")
    assert n == 120 and lines[0].startswith("jackson_0_0  [ 638 ")
    assert lines[1].split()[1:] == ["z_B", "iy_I", "r_I", "ow_E"] and lines[2] == ""


def test_length_tolerance_semantics():
    """Kaldi nnet1 trims both to the shorter: targets longer than the features are cut,
    shorter ones kept as they are (no label is made up); 5 or more apart: dropped."""
    t = np.array([7, 7, 8, 9], dtype=np.int32)
    assert match_length(t, 4, 5)[1] == "exact"
    v, s = match_length(t, 6, 5)
    assert s == "shorter" and v.tolist() == [7, 7, 8, 9]
    v, s = match_length(t, 2, 5)
    assert s == "trimmed" and v.tolist() == [7, 7]
    assert match_length(t, 9, 5) == (None, "dropped")  # |diff| = 5 is not < 5 (Kaldi nnet1)
    assert match_length(t, 8, 5)[1] == "shorter"
    assert within_tolerance(4, 8, 5) and not within_tolerance(4, 9, 5)
    assert not within_tolerance(0, 1, 5)


# ------------------------------------------------------------------ imports of made-up dirs
def _write_ali_dir(dst, alis, tm_path, num_jobs=1, text=True):
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tm_path, dst / "final.mdl")
    keys = sorted(alis)
    for j in range(num_jobs):
        with IntVectorWriter(f"ark{',t' if text else ''}:| gzip -c > {dst}/ali.{j + 1}.gz") as w:
            for k in keys[j::num_jobs]:
                w.write(k, alis[k])
    (dst / "num_jobs").write_text(f"{num_jobs}\n")
    return dst


def test_binary_multi_job_alignments_import_identically(imported, alis, digits, tmp_path):
    ali_dir = _write_ali_dir(tmp_path / "ali_bin", alis, digits / "exp/mono_ali/final.mdl",
                             num_jobs=3, text=False)
    with gzip.open(ali_dir / "ali.2.gz", "rb") as f:
        assert b"\0B" in f.read(200)
    data = tmp_path / "data"
    data.mkdir()
    (data / "utt2num_frames").write_text("".join(f"{k} {len(v)}\n" for k, v in sorted(alis.items())))
    report = import_alignments(str(ali_dir), str(data), str(tmp_path / "out"))
    assert report.utterances_imported == 120
    a = read_int_vector_scp(str(tmp_path / "out/targets.scp"))
    b = read_int_vector_scp(str(imported[0] / "targets.scp"))
    assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_tuples_model_import(alis, tm, digits, tmp_path):
    """A <Tuples> model (separate self-loop pdfs) written by our writer: self-loop frames get
    the self-loop pdfs."""
    from tests.test_transition_model import _with_separate_self_loop_pdfs
    variant = _with_separate_self_loop_pdfs(tm)
    write_transition_model(variant, str(tmp_path / "tuples.mdl"), binary=True)
    ali_dir = _write_ali_dir(tmp_path / "ali", alis, tmp_path / "tuples.mdl")
    data = tmp_path / "data"
    data.mkdir()
    (data / "utt2num_frames").write_text("".join(f"{k} {len(v)}\n" for k, v in sorted(alis.items())))
    import_alignments(str(ali_dir), str(data), str(tmp_path / "out"))
    targets = read_int_vector_scp(str(tmp_path / "out/targets.scp"))
    assert (tmp_path / "out/num_pdfs").read_text() == "140\n"
    for utt, ali in alis.items():
        loops = tm.tid_is_self_loop[ali]
        np.testing.assert_array_equal(targets[utt], tm.tid2pdf[ali] + 70 * loops)


def test_length_mismatches_and_missing_utterances(alis, digits, tmp_path):
    ali_dir = _write_ali_dir(tmp_path / "ali", alis, digits / "exp/mono_ali/final.mdl")
    keys = sorted(alis)
    lengths = {k: len(alis[k]) for k in keys}
    lengths[keys[0]] += 2    # targets shorter: kept
    lengths[keys[1]] -= 4    # targets longer: trimmed
    lengths[keys[2]] += 5    # dropped (not < 5)
    del lengths[keys[3]]     # alignment without features
    lengths["extra_utt"] = 50  # features without alignment
    data = tmp_path / "data"
    data.mkdir()
    (data / "utt2num_frames").write_text("".join(f"{k} {n}\n" for k, n in sorted(lengths.items())))
    out = tmp_path / "out"
    r = import_alignments(str(ali_dir), str(data), str(out), length_tolerance=5)
    assert (r.shorter_within_tolerance, r.trimmed_within_tolerance, r.dropped_over_tolerance,
            r.alignment_without_features, r.features_without_alignment,
            r.utterances_imported, r.exact_length) == (1, 1, 1, 1, 1, 118, 116)
    t = read_int_vector_scp(str(out / "targets.scp"))
    assert keys[2] not in t and keys[3] not in t and "extra_utt" not in t
    tm = read_transition_model(str(digits / "exp/mono_ali/final.mdl"))
    # every imported alignment is its own pdfs, cut at the feature length, never extended
    for k in t:
        np.testing.assert_array_equal(t[k], tm.tid2pdf[alis[k]][:lengths[k]])
    assert len(t[keys[0]]) == lengths[keys[0]] - 2 and len(t[keys[1]]) == lengths[keys[1]]
    recorded = dict(l.split() for l in (out / "target_lengths").read_text().splitlines())
    assert list(recorded) == sorted(t) and {k: int(n) for k, n in recorded.items()} == \
        {k: len(v) for k, v in t.items()}
    assert r.frames_imported == sum(len(v) for v in t.values())
    rep = json.loads((out / "import_report.json").read_text())
    assert rep["examples"]["dropped_over_tolerance"] == [keys[2]]
    assert rep["examples"]["shorter_within_tolerance"] == [keys[0]]
    assert rep["examples"]["trimmed_within_tolerance"] == [keys[1]]


def _rotated_model(tm: TransitionModel) -> TransitionModel:
    """Same topology, transition-states in another order: the same number of transition-ids,
    numbered differently (the alignments of one are not alignments of the other)."""
    rows = np.concatenate([tm.tuples[1:], tm.tuples[:1]])  # the first has 4 transitions
    return TransitionModel(tm.topology, rows, np.concatenate([[0], tm.log_probs[5:],
                                                              tm.log_probs[1:5]]))


@pytest.mark.parametrize("case", ["corrupt_gzip", "tid_too_large", "wrong_model", "not_a_model",
                                  "truncated_model"])
def test_bad_input_leaves_nothing(case, alis, tm, digits, tmp_path):
    ali_dir = _write_ali_dir(tmp_path / "ali", alis, digits / "exp/mono_ali/final.mdl")
    data = tmp_path / "data"
    data.mkdir()
    (data / "utt2num_frames").write_text("".join(f"{k} {len(v)}\n" for k, v in sorted(alis.items())))
    if case == "corrupt_gzip":
        raw = (ali_dir / "ali.1.gz").read_bytes()
        (ali_dir / "ali.1.gz").write_bytes(raw[: len(raw) // 2])
        pattern = r"ali\.1\.gz: corrupt gzip"
    elif case == "tid_too_large":
        bad = dict(alis)
        k = sorted(alis)[5]
        bad[k] = alis[k].copy()
        bad[k][3] = 661
        _write_ali_dir(ali_dir, bad, digits / "exp/mono_ali/final.mdl")
        pattern = rf"ali\.1\.gz: utterance {k}: transition-id 661 is outside the model"
    elif case == "wrong_model":
        write_transition_model(_rotated_model(tm), str(ali_dir / "final.mdl"))
        pattern = r"utterance \S+: .*final\.mdl does not match its alignments"
    elif case == "not_a_model":
        (ali_dir / "final.mdl").write_text("<Nnet> something else\n")
        pattern = r"final\.mdl: not a Kaldi model"
    else:
        (ali_dir / "final.mdl").write_bytes((digits / "exp/mono_ali/final.mdl").read_bytes()[:3000])
        pattern = r"final\.mdl: unexpected end of file"
    out = tmp_path / "out"
    with pytest.raises(FormatError, match=pattern):
        import_alignments(str(ali_dir), str(data), str(out))
    assert not out.exists() or list(out.iterdir()) == []


def test_step_script_end_to_end(digits, repo_dir, env_with_path, tmp_path):
    out = tmp_path / "imp"
    r = subprocess.run([str(repo_dir / "steps/import_ali.sh"), "--length-tolerance", "3",
                        "--label-delay", "0",  # accepted for old scripts: it changes nothing
                        "exp/mono_ali", "data/train", str(out)], cwd=digits, env=env_with_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "imported 120 utterances" in r.stdout
    assert json.loads((out / "import_report.json").read_text())["length_tolerance"] == 3
    assert len(read_int_vector_scp(str(out / "targets.scp"))) == 120
    assert len((out / "target_lengths").read_text().splitlines()) == 120
    # an import-time label delay is refused, naming the trainer's option; nothing is written
    out3 = tmp_path / "imp3"
    r = subprocess.run([str(repo_dir / "steps/import_ali.sh"), "--label-delay", "5",
                        "exp/mono_ali", "data/train", str(out3)], cwd=digits, env=env_with_path,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "--label-delay=5" in r.stderr and "train" in r.stderr
    assert not out3.exists()
    r = subprocess.run([sys.executable, str(repo_dir / "pybin/import_alignments.py"),
                        "--label-delay=2", "exp/mono_ali", "data/train", str(out3)], cwd=digits,
                       env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 1 and "train with --label-delay=2" in r.stderr
    assert not out3.exists()
    # failure: a corrupt alignment dir, non-zero exit, error names the file, nothing left
    bad = tmp_path / "bad_ali"
    shutil.copytree(digits / "exp/mono_ali", bad)
    os.chmod(bad / "ali.1.gz", 0o644)
    (bad / "ali.1.gz").write_bytes(b"\x1f\x8b garbage")
    out2 = tmp_path / "imp2"
    r = subprocess.run([str(repo_dir / "steps/import_ali.sh"), str(bad), "data/train", str(out2)],
                       cwd=digits, env=env_with_path, capture_output=True, text=True)
    assert r.returncode != 0
    assert "ali.1.gz" in r.stderr
    assert sorted(p.name for p in out2.iterdir()) == ["log"]


def test_ali_to_pdf_command(digits, repo_dir, env_with_path, alis, tm, tmp_path):
    r = subprocess.run([str(repo_dir / "pybin/ali_to_pdf.py"), "exp/mono_ali/final.mdl",
                        "ark:gunzip -c exp/mono_ali/ali.*.gz|", "ark,t:-"], cwd=digits,
                       env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 120
    utt, *pdfs = lines[0].split()
    assert [int(p) for p in pdfs] == tm.tid2pdf[alis[utt]].tolist()
    bad = tmp_path / "bad.ark"
    bad.write_text("uttX 1 2 700 \n")
    r = subprocess.run([str(repo_dir / "pybin/ali_to_pdf.py"), "exp/mono_ali/final.mdl",
                        f"ark:{bad}", f"ark:{tmp_path}/out.ark"], cwd=digits,
                       env=env_with_path, capture_output=True, text=True)
    assert r.returncode == 1 and "uttX" in r.stderr and "transition-id 700" in r.stderr
    assert not (tmp_path / "out.ark").exists()
