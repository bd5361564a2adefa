"""compute_wer: Kaldi compute-wer's counts, modes and output format, checked against hand
counts and against Kaldi's own scoring outputs in kaldi_digits/exp/mono/decode."""
from __future__ import annotations

import subprocess
import sys

import pytest

from hybridasr.kaldi.io.table import parse_text_archive, read_text_archive
from hybridasr.decode.wer import WerStats, compute_wer
from hybridasr.errors import ConfigError, FormatError


def table(text):
    return parse_text_archive(text.splitlines(keepends=True), "<test>")


REF = table("u1 a b c d\nu2 e f\nu3 g h i\nu4 j\n")


def test_insertions_deletions_substitutions():
    hyp = table("u1 a x c d y\nu2 e\nu3 g h i\nu4 j\n")  # u1: 1 sub + 1 ins, u2: 1 del
    s = compute_wer(REF, hyp)
    assert (s.num_ins, s.num_del, s.num_sub, s.word_errs, s.num_words) == (1, 1, 1, 3, 10)
    assert (s.sent_errs, s.num_sent, s.num_absent) == (2, 4, 0)
    assert s.format() == ("%WER 30.00 [ 3 / 10, 1 ins, 1 del, 1 sub ]\n"
                          "%SER 50.00 [ 2 / 4 ]\n"
                          "Scored 4 sentences, 0 not present in hyp.\n")


def test_empty_hypothesis_counts_all_words_deleted():
    hyp = table("u1\nu2 e f\nu3 g h i\nu4 j\n")
    assert hyp["u1"] == []
    s = compute_wer(REF, hyp)
    assert (s.num_del, s.word_errs, s.sent_errs) == (4, 4, 1)
    assert s.format().splitlines()[0] == "%WER 40.00 [ 4 / 10, 0 ins, 4 del, 0 sub ]"


def test_missing_utterances_by_mode():
    hyp = table("u1 a b c d\nu3 g h x\n")
    present = compute_wer(REF, hyp, "present")
    assert (present.num_words, present.word_errs, present.num_sent, present.num_absent) == \
        (7, 1, 2, 2)
    assert present.format() == ("%WER 14.29 [ 1 / 7, 0 ins, 0 del, 1 sub ] [PARTIAL]\n"
                                "%SER 50.00 [ 1 / 2 ]\n"
                                "Scored 2 sentences, 2 not present in hyp.\n")
    everything = compute_wer(REF, hyp, "all")
    assert (everything.num_words, everything.num_del, everything.word_errs,
            everything.num_sent) == (10, 3, 4, 4)
    with pytest.raises(FormatError, match="u2"):
        compute_wer(REF, hyp, "strict")
    with pytest.raises(ConfigError):
        compute_wer(REF, hyp, "sometimes")


def test_kaldi_tie_breaking_and_rounding():
    # Kaldi prefers a substitution only when strictly cheaper, then deletion over insertion
    s = WerStats()
    s.add(["a", "b"], ["b", "a"])
    assert (s.word_errs, s.num_ins, s.num_del, s.num_sub) == (2, 1, 1, 0)
    s = WerStats()
    s.add(["a", "b", "c"], ["a", "x", "y", "c"])
    assert (s.word_errs, s.num_ins, s.num_del, s.num_sub) == (2, 1, 0, 1)
    third = WerStats(num_words=3, word_errs=1, num_sent=8, sent_errs=1)
    assert third.format().splitlines()[:2] == ["%WER 33.33 [ 1 / 3, 0 ins, 0 del, 0 sub ]",
                                               "%SER 12.50 [ 1 / 8 ]"]
    assert WerStats(num_words=3, word_errs=2).format().startswith("%WER 66.67 ")
    assert WerStats().format().splitlines()[:2] == ["%WER -nan [ 0 / 0, 0 ins, 0 del, 0 sub ]",
                                                    "%SER -nan [ 0 / 0 ]"]


def test_text_archive_errors_name_file_and_line(tmp_path):
    p = tmp_path / "hyp.txt"
    p.write_text("u1 a\n\nu2 b\n")
    with pytest.raises(FormatError, match="hyp.txt:2: empty line"):
        read_text_archive(str(p))
    p.write_text("u1 a\nu1 b\n")
    with pytest.raises(FormatError, match="hyp.txt:2: duplicate key"):
        read_text_archive(str(p))


def _run(cmd, env, cwd, stdin=None):
    return subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=60, shell=isinstance(cmd, str))


def kaldi_scoring(repo_dir, tra_command, tool, *opts):
    """Kaldi's local/score.sh pipeline on kaldi_digits' exp/mono/decode, with our int2sym.pl
    and ``tool`` (compute_wer.py or compute_wer_sweep.py with ``opts``)."""
    return (f"{tra_command} | {repo_dir}/utils/int2sym.pl -f 2- exp/mono/graph/words.txt | "
            f"sed 's:<UNK>::g' | {sys.executable} {repo_dir}/pybin/{tool} --text "
            f"--mode=present {' '.join(opts)} ark:exp/mono/decode/scoring/test_filt.txt "
            f"ark,p:-")


@pytest.mark.parametrize("lmwt", range(7, 18))
def test_reproduces_kaldi_wer_files(kaldi_digits, env_with_path, repo_dir, lmwt):
    # Kaldi's local/score.sh pipeline, with our int2sym.pl and compute_wer.py
    cmd = kaldi_scoring(repo_dir, f"cat exp/mono/decode/scoring/{lmwt}.tra", "compute_wer.py")
    p = _run(cmd, env_with_path, kaldi_digits)
    assert p.returncode == 0, p.stderr
    kaldi = (kaldi_digits / f"exp/mono/decode/wer_{lmwt}").read_text().splitlines(True)
    assert kaldi[0].startswith("compute-wer --text --mode=present")
    assert p.stdout == "".join(kaldi[1:])
    assert p.stderr.startswith("compute_wer.py --text --mode=present")


def test_compute_wer_tool_integer_mode_and_stats(tmp_path, env_with_path, repo_dir):
    (tmp_path / "ref").write_text("u1 1 2 3\nu2 4\n")
    (tmp_path / "hyp").write_text("u1 1 5 3 6\nu2 \n")
    tool = [sys.executable, str(repo_dir / "pybin/compute_wer.py")]
    p = _run(tool + ["--mode=present", f"ark:{tmp_path}/ref", f"ark:{tmp_path}/hyp",
                     f"{tmp_path}/stats"], env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "%WER 75.00 [ 3 / 4, 1 ins, 1 del, 1 sub ]"
    assert (tmp_path / "stats").read_text().splitlines() == [
        "correct 1", "substitution 2 5", "correct 3", "insertion 6", "deletion 4"]
    (tmp_path / "hyp").write_text("u1 one\n")
    p = _run(tool + [f"ark:{tmp_path}/ref", f"ark:{tmp_path}/hyp"], env_with_path, tmp_path)
    assert p.returncode == 1 and "'one' is not an integer" in p.stderr
    p = _run(tool + ["--text", f"ark:{tmp_path}/ref", f"ark:{tmp_path}/hyp"], env_with_path,
             tmp_path)  # default mode strict: u2 has no hypothesis
    assert p.returncode == 1 and "u2" in p.stderr and "Traceback" not in p.stderr


def test_sweep_scores_every_set_as_compute_wer_scores_each(kaldi_digits, env_with_path,
                                                            repo_dir, tmp_path):
    # Kaldi's 1-best files of LM weights 7..17 as one stream keyed <lmwt>|<utt> (what
    # steps/score.sh sends): each output file is what compute_wer.py writes for that LM
    # weight alone (its echoed command line, then Kaldi's wer_<lmwt> lines)
    sets = [str(x) for x in range(7, 18)]
    stream = "".join(f"sed 's:^:{s}|:' exp/mono/decode/scoring/{s}.tra; " for s in sets)
    cmd = kaldi_scoring(repo_dir, f"{{ {stream}}}", "compute_wer_sweep.py",
                        f"--sets={','.join(sets)}") + f" {tmp_path}/wer_SET"
    p = _run(cmd, env_with_path, kaldi_digits)
    assert p.returncode == 0, p.stderr
    for s in sets:
        ours = (tmp_path / f"wer_{s}").read_text().splitlines(True)
        kaldi = (kaldi_digits / f"exp/mono/decode/wer_{s}").read_text().splitlines(True)
        assert ours[0] == ("compute_wer.py --text --mode=present "
                           "ark:exp/mono/decode/scoring/test_filt.txt ark,p:-\n")
        assert ours[1:] == kaldi[1:] and len(ours) == 4
    # a set given with no hypothesis is scored as none present; a key of no set is an error
    p = _run(cmd.replace("--sets=", "--sets=99,"), env_with_path, kaldi_digits)
    assert p.returncode == 0, p.stderr
    (tmp_path / "empty").write_text("")
    alone = _run([sys.executable, str(repo_dir / "pybin/compute_wer.py"), "--text",
                  "--mode=present", "ark:exp/mono/decode/scoring/test_filt.txt",
                  f"ark:{tmp_path}/empty"], env_with_path, kaldi_digits)
    assert alone.returncode == 0 and "Scored 0 sentences, 30 not present" in alone.stdout
    assert (tmp_path / "wer_99").read_text().splitlines(True)[1:] == \
        alone.stdout.splitlines(True)
    p = _run(cmd.replace("--sets=7,", "--sets="), env_with_path, kaldi_digits)
    assert p.returncode == 1 and "hypothesis key '7|" in p.stderr
    assert "Traceback" not in p.stderr
