"""Data-dir utilities (validate, fix, split, subset, copy, tr/cv, spk2utt tools) on copies of
the real Kaldi data dirs of kaldi_digits, and on broken copies of them."""
from __future__ import annotations

import filecmp
import os
import subprocess
from pathlib import Path

import pytest

from hybridasr.datadir.files import read_table
from hybridasr.datadir.split import split_by_speaker
from hybridasr.datadir.subset import select_evenly

REPO = Path(__file__).resolve().parents[1]
UTILS = REPO / "utils"


def util(name, *args, cwd, env, ok=True):
    r = subprocess.run([str(UTILS / name), *map(str, args)], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120)
    if ok:
        assert r.returncode == 0, f"{name} {args} failed:\n{r.stdout}\n{r.stderr}"
    return r


def keys(path: Path):
    return [line.split()[0] for line in path.read_text().splitlines()]


def lines(path: Path):
    return path.read_text().splitlines()


@pytest.fixture
def s5(kaldi_digits_copy):
    """The copied experiment dir, used as the recipe dir (paths in scp files are relative)."""
    return kaldi_digits_copy


def test_validate_accepts_the_real_data_dirs(s5, env_with_path):
    for d in ("data/train", "data/test"):
        r = util("validate_data_dir.sh", d, cwd=s5, env=env_with_path)
        assert f"Successfully validated data-directory {d}" in r.stderr


def _swap_lines(p: Path, i: int, j: int):
    ls = lines(p)
    ls[i - 1], ls[j - 1] = ls[j - 1], ls[i - 1]
    p.write_text("\n".join(ls) + "\n")


def _delete_line(p: Path, i: int):
    ls = lines(p)
    del ls[i - 1]
    p.write_text("\n".join(ls) + "\n")


def _duplicate_line(p: Path, i: int):
    ls = lines(p)
    ls.insert(i, ls[i - 1])
    p.write_text("\n".join(ls) + "\n")


def _blank_line(p: Path, i: int):
    ls = lines(p)
    ls.insert(i - 1, "")
    p.write_text("\n".join(ls) + "\n")


def _crlf(p: Path):
    p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))


BROKEN = {
    "unsorted": (lambda d: _swap_lines(d / "text", 3, 4),
                 "data/train/text:4: not sorted: key 'jackson_0_2' comes after 'jackson_0_3'"),
    "missing_from_utt2spk": (lambda d: _delete_line(d / "utt2spk", 5),
                             "data/train/spk2utt:1: utterance 'jackson_0_4' of speaker "
                             "'jackson_0' is not in data/train/utt2spk"),
    "duplicate_key": (lambda d: _duplicate_line(d / "feats.scp", 5),
                      "data/train/feats.scp:6: duplicate key 'jackson_0_4' (also on line 5)"),
    "empty_line": (lambda d: _blank_line(d / "wav.scp", 7), "data/train/wav.scp:7: empty line"),
    "windows_line_endings": (lambda d: _crlf(d / "text"),
                             "data/train/text:1: Windows line ending"),
    "utterance_without_text": (lambda d: _delete_line(d / "text", 20),
                               "data/train/utt2spk:20: utterance 'jackson_1_9' has no line in "
                               "data/train/text"),
    "unknown_speaker_in_cmvn": (
        lambda d: (d / "cmvn.scp").write_text((d / "cmvn.scp").read_text().replace(
            "jackson_1 ", "jackson_1x ")),
        "data/train/cmvn.scp:2: speaker 'jackson_1x' is not in data/train/spk2utt"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_copies_name_file_and_line_and_fix_repairs_them(case, s5, env_with_path):
    data = s5 / "data" / "train"
    originals = {p.name: p.read_bytes() for p in data.iterdir() if p.is_file()}
    breaker, message = BROKEN[case]
    breaker(data)
    r = util("validate_data_dir.sh", "data/train", cwd=s5, env=env_with_path, ok=False)
    assert r.returncode == 1
    assert message in r.stderr, r.stderr
    util("fix_data_dir.sh", "data/train", cwd=s5, env=env_with_path)
    util("validate_data_dir.sh", "data/train", cwd=s5, env=env_with_path)
    # the files as they were before fixing are in .backup
    broken_name = {"unsorted": "text", "missing_from_utt2spk": "utt2spk",
                   "duplicate_key": "feats.scp", "empty_line": "wav.scp",
                   "windows_line_endings": "text", "utterance_without_text": "text",
                   "unknown_speaker_in_cmvn": "cmvn.scp"}[case]
    assert (data / ".backup" / broken_name).read_bytes() != originals[broken_name]
    n = len(lines(data / "utt2spk"))
    expected = {"missing_from_utt2spk": 119, "utterance_without_text": 119,
                "unknown_speaker_in_cmvn": 110}.get(case, 120)
    assert n == expected
    if expected == 120:  # nothing lost: the fixed files are the originals again
        for name, content in originals.items():
            assert (data / name).read_bytes() == content, name


def test_validate_options_and_missing_files(s5, env_with_path):
    data = s5 / "data" / "test"
    (data / "feats.scp").unlink()
    r = util("validate_data_dir.sh", "data/test", cwd=s5, env=env_with_path, ok=False)
    assert r.returncode == 1 and "no such file data/test/feats.scp" in r.stderr
    util("validate_data_dir.sh", "--no-feats", "data/test", cwd=s5, env=env_with_path)
    (data / "text").unlink()
    (data / "wav.scp").unlink()
    util("validate_data_dir.sh", "--no-feats", "--no-text", "--no-wav", "data/test", cwd=s5,
         env=env_with_path)


def test_validate_spk_sort_and_non_printable(s5):
    from hybridasr.errors import FormatError
    from hybridasr.datadir.validate import validate_data_dir

    data = s5 / "data" / "test"
    # speaker ids that do not prefix the utterance ids break the speaker-sorted order
    utt2spk = [f"{u} {'z' if i % 2 else 'a'}" for i, u in enumerate(keys(data / "utt2spk"))]
    (data / "utt2spk").write_text("\n".join(utt2spk) + "\n")
    utts = keys(data / "utt2spk")
    (data / "spk2utt").write_text("a " + " ".join(utts[0::2]) + "\nz " +
                                  " ".join(utts[1::2]) + "\n")
    for f in ("cmvn.scp", "spk2gender"):
        (data / f).unlink()
    with pytest.raises(FormatError, match=r"utt2spk:3: utt2spk is not in sorted order when "
                                          r"sorted first on the speaker"):
        validate_data_dir(str(data))
    validate_data_dir(str(data), no_spk_sort=True)
    text = lines(data / "text")
    text[2] += "\x07"
    (data / "text").write_text("\n".join(text) + "\n")
    with pytest.raises(FormatError, match=r"text:3: non-printable character U\+0007"):
        validate_data_dir(str(data), no_spk_sort=True)
    validate_data_dir(str(data), no_spk_sort=True, non_print=True)


def test_split_matches_kaldis_split1_and_balances_speakers(s5, env_with_path, kaldi_digits):
    data = s5 / "data" / "train"
    import shutil
    shutil.rmtree(data / "split1")
    util("split_data.sh", "data/train", 1, cwd=s5, env=env_with_path)
    kaldi_split = kaldi_digits / "data" / "train" / "split1" / "1"
    names = sorted(os.listdir(kaldi_split))
    assert names == sorted(os.listdir(data / "split1" / "1"))
    _, mismatch, errors = filecmp.cmpfiles(kaldi_split, data / "split1" / "1", names,
                                           shallow=False)
    assert not mismatch and not errors

    util("split_data.sh", "data/train", 5, cwd=s5, env=env_with_path)
    parts = [data / "split5" / str(n) for n in range(1, 6)]
    all_utts, all_spks = [], []
    for p in parts:
        util("validate_data_dir.sh", p.relative_to(s5), cwd=s5, env=env_with_path)
        assert sorted(os.listdir(p)) == sorted(
            n for n in os.listdir(data) if (data / n).is_file())
        all_utts += keys(p / "utt2spk")
        all_spks += keys(p / "spk2utt")
    assert sorted(all_utts) == keys(data / "utt2spk")
    assert sorted(all_spks) == keys(data / "spk2utt")  # each speaker in exactly one part
    # Kaldi's split_scp.pl assignment: 12 speakers of 10 utterances into 5 parts
    assert [len(lines(p / "utt2spk")) for p in parts] == [30, 20, 30, 20, 20]


def test_split_refuses_more_parts_than_speakers_and_skips_when_up_to_date(s5, env_with_path):
    data = s5 / "data" / "test"  # 3 speakers
    r = util("split_data.sh", "data/test", 4, cwd=s5, env=env_with_path, ok=False)
    assert r.returncode == 1 and "only 3 speakers" in r.stderr
    util("split_data.sh", "--per-utt", "data/test", 4, cwd=s5, env=env_with_path)
    sizes = [len(lines(data / "split4utt" / str(n) / "utt2spk")) for n in range(1, 5)]
    assert sizes == [8, 8, 7, 7]
    util("split_data.sh", "data/test", 3, cwd=s5, env=env_with_path)
    first = data / "split3" / "1" / "feats.scp"
    os.utime(first, (1_000_000_000, 1_000_000_000))  # older than data/test/feats.scp
    os.utime(data / "split3" / "2" / "text", (1_000_000_000, 1_000_000_000))
    for n in range(1, 4):  # make the split newer than its sources again, but for one file
        for f in (data / "split3" / str(n)).iterdir():
            if f != first:
                os.utime(f, None)
    util("split_data.sh", "data/test", 3, cwd=s5, env=env_with_path)
    assert first.stat().st_mtime > 1_000_000_000  # re-split: a file was older than its source
    mtime = first.stat().st_mtime_ns
    util("split_data.sh", "data/test", 3, cwd=s5, env=env_with_path)
    assert first.stat().st_mtime_ns == mtime  # up to date: left alone


def test_split_by_speaker_balances_like_kaldi():
    pairs = [(f"a_{i}", "a") for i in range(10)] + [(f"b_{i}", "b") for i in range(10)] + \
        [("c_0", "c"), ("d_0", "d")]
    # first a,b | c,d (20 vs 2 utterances); moving b to the second part evens it out
    parts = split_by_speaker(pairs, 2)
    assert [sorted({s for _, s in p}) for p in parts] == [["a"], ["b", "c", "d"]]
    pairs = [(f"a_{i}", "a") for i in range(10)] + [("b_0", "b")] + \
        [(f"c_{i}", "c") for i in range(5)] + [(f"d_{i}", "d") for i in range(5)]
    parts = split_by_speaker(pairs, 2)  # 11 vs 10: no move makes it more even
    assert [sorted({s for _, s in p}) for p in parts] == [["a", "b"], ["c", "d"]]


def test_subset_modes(s5, env_with_path, monkeypatch):
    src = "data/train"
    util("subset_data_dir.sh", "--first", src, 5, "data/first5", cwd=s5, env=env_with_path)
    assert keys(s5 / "data/first5/utt2spk") == keys(s5 / "data/train/utt2spk")[:5]
    util("subset_data_dir.sh", "--last", src, 5, "data/last5", cwd=s5, env=env_with_path)
    assert keys(s5 / "data/last5/utt2spk") == keys(s5 / "data/train/utt2spk")[-5:]
    r = util("subset_data_dir.sh", src, 12, "data/even12", cwd=s5, env=env_with_path)
    assert "reducing #utt from 120 to 12" in r.stderr
    even = keys(s5 / "data/even12/utt2spk")
    assert even == [u for u, _ in select_evenly(
        [tuple(ln.split()) for ln in lines(s5 / "data/train/utt2spk")], 12)]
    assert len({u.rsplit("_", 1)[0] for u in even}) >= 8  # spread over the speakers
    (s5 / "ul").write_text("theo_4_9\njackson_0_1 extra fields\n")
    util("subset_data_dir.sh", "--utt-list", "ul", src, "data/ul", cwd=s5, env=env_with_path)
    assert keys(s5 / "data/ul/utt2spk") == ["jackson_0_1", "theo_4_9"]
    assert keys(s5 / "data/ul/cmvn.scp") == ["jackson_0", "theo_4"]
    (s5 / "sl").write_text("nicolas_3\n")
    util("subset_data_dir.sh", "--spk-list", "sl", src, "data/sl", cwd=s5, env=env_with_path)
    assert keys(s5 / "data/sl/spk2utt") == ["nicolas_3"]
    assert len(lines(s5 / "data/sl/feats.scp")) == 10
    util("subset_data_dir.sh", "--per-spk", src, 3, "data/per3", cwd=s5, env=env_with_path)
    assert lines(s5 / "data/per3/spk2utt")[0] == "jackson_0 jackson_0_0 jackson_0_3 jackson_0_6"
    util("subset_data_dir.sh", "--shortest", src, 4, "data/short4", cwd=s5, env=env_with_path)
    from hybridasr.kaldi.io.matrix_lengths import read_scp_lengths
    monkeypatch.chdir(s5)
    lengths = read_scp_lengths("data/train/feats.scp")
    shortest = sorted(lengths, key=lambda u: (lengths[u], u))[:4]
    assert keys(s5 / "data/short4/utt2spk") == sorted(shortest)
    for d in ("first5", "last5", "even12", "ul", "sl", "per3", "short4"):
        util("validate_data_dir.sh", f"data/{d}", cwd=s5, env=env_with_path)
    r = util("subset_data_dir.sh", src, 500, "data/toomany", cwd=s5, env=env_with_path,
             ok=False)
    assert r.returncode == 1 and "more utterances (500)" in r.stderr


def test_select_evenly_is_kaldis_halving():
    assert select_evenly(list(range(8)), 4) == [1, 3, 5, 7]
    assert select_evenly(list(range(5)), 5) == [0, 1, 2, 3, 4]
    assert select_evenly(list(range(10)), 1) == [9]


def test_copy_data_dir_with_prefixes(s5, env_with_path):
    util("copy_data_dir.sh", "--utt-prefix", "sp1.1-", "--spk-prefix", "sp1.1-", "data/test",
         "data/test_sp", cwd=s5, env=env_with_path)
    src, dst = s5 / "data/test", s5 / "data/test_sp"
    assert keys(dst / "utt2spk") == ["sp1.1-" + k for k in keys(src / "utt2spk")]
    assert lines(dst / "spk2utt")[0].split()[:2] == ["sp1.1-jackson_4", "sp1.1-jackson_4_0"]
    assert keys(dst / "cmvn.scp") == ["sp1.1-" + k for k in keys(src / "cmvn.scp")]
    assert [ln.split(None, 1)[1] for ln in lines(dst / "feats.scp")] == \
        [ln.split(None, 1)[1] for ln in lines(src / "feats.scp")]
    util("copy_data_dir.sh", "data/test", "data/test_copy", cwd=s5, env=env_with_path)
    for name in ("utt2spk", "spk2utt", "text", "wav.scp", "feats.scp", "cmvn.scp",
                 "spk2gender"):
        assert (s5 / "data/test_copy" / name).read_bytes() == (src / name).read_bytes()


def test_tr_cv_split_holds_out_whole_speakers(s5, env_with_path):
    util("subset_data_dir_tr_cv.sh", "data/train", "data/tr90", "data/cv10", cwd=s5,
         env=env_with_path)
    tr, cv = s5 / "data/tr90", s5 / "data/cv10"
    assert len(keys(cv / "spk2utt")) == 1 and len(keys(tr / "spk2utt")) == 11  # int(10% of 12)
    assert not set(keys(tr / "spk2utt")) & set(keys(cv / "spk2utt"))
    assert sorted(keys(tr / "utt2spk") + keys(cv / "utt2spk")) == keys(s5 / "data/train/utt2spk")
    for d in ("data/tr90", "data/cv10"):
        util("validate_data_dir.sh", d, cwd=s5, env=env_with_path)
    util("subset_data_dir_tr_cv.sh", "--cv-spk-percent", 25, "data/train", "data/tr2",
         "data/cv2", cwd=s5, env=env_with_path)
    assert len(keys(s5 / "data/cv2/spk2utt")) == 3
    util("subset_data_dir_tr_cv.sh", "--cv-utt-percent", 10, "data/test", "data/tr3",
         "data/cv3", cwd=s5, env=env_with_path)
    assert len(keys(s5 / "data/cv3/utt2spk")) == 3
    r = util("subset_data_dir_tr_cv.sh", "data/test", "data/tr4", "data/cv4", cwd=s5,
             env=env_with_path)  # 10% of 3 speakers is none: an utterance split instead
    assert "leaves an empty cv set: splitting by utterance instead" in r.stderr
    assert len(keys(s5 / "data/cv4/utt2spk")) == 3 and len(keys(s5 / "data/tr4/utt2spk")) == 27


def test_spk2utt_tools_and_filter_scp(s5, env_with_path):
    data = s5 / "data/train"

    def pl(name, *args, stdin=None):
        r = subprocess.run([str(UTILS / name), *map(str, args)], cwd=s5, env=env_with_path,
                           input=stdin, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert pl("utt2spk_to_spk2utt.pl", stdin=(data / "utt2spk").read_text()) == \
        (data / "spk2utt").read_text()
    assert pl("spk2utt_to_utt2spk.pl", data / "spk2utt") == (data / "utt2spk").read_text()
    (s5 / "ids").write_text("jackson_0_1\ntheo_4_9\n")
    assert pl("filter_scp.pl", "ids", data / "text") == "jackson_0_1 one\ntheo_4_9 nine\n"
    assert len(pl("filter_scp.pl", "--exclude", "ids", data / "text").splitlines()) == 118
    (s5 / "spks").write_text("theo_4\n")
    assert len(pl("filter_scp.pl", "-f", 2, "spks", stdin=(data / "utt2spk").read_text())
               .splitlines()) == 10


@pytest.fixture
def segmented(s5):
    """data/seg: the test audio as 3 recordings cut into segments (a segments-based dir)."""
    src, d = s5 / "data/test", s5 / "data/seg"
    d.mkdir()
    wavs = lines(src / "wav.scp")[:3]
    (d / "wav.scp").write_text("".join(f"rec{i} {w.split()[1]}\n" for i, w in enumerate(wavs)))
    seg, u2s = [], []
    for i in range(3):
        for j, (a, b) in enumerate(((0.0, 0.2), (0.2, 0.35))):
            utt = f"spk{i}-rec{i}-{j}"
            seg.append(f"{utt} rec{i} {a} {b}")
            u2s.append(f"{utt} spk{i}")
    (d / "segments").write_text("\n".join(seg) + "\n")
    (d / "utt2spk").write_text("\n".join(u2s) + "\n")
    (d / "spk2utt").write_text("".join(f"spk{i} spk{i}-rec{i}-0 spk{i}-rec{i}-1\n"
                                       for i in range(3)))
    (d / "text").write_text("".join(f"{u.split()[0]} x\n" for u in u2s))
    return d


def test_segments_dirs_validate_split_and_subset(segmented, s5, env_with_path):
    util("validate_data_dir.sh", "--no-feats", "data/seg", cwd=s5, env=env_with_path)
    util("split_data.sh", "data/seg", 3, cwd=s5, env=env_with_path)
    for n in (1, 2, 3):
        part = segmented / "split3" / str(n)
        assert keys(part / "wav.scp") == [f"rec{n - 1}"]  # the recording of its segments
        util("validate_data_dir.sh", "--no-feats", part.relative_to(s5), cwd=s5,
             env=env_with_path)
    (s5 / "one").write_text("spk1-rec1-0\n")
    util("subset_data_dir.sh", "--utt-list", "one", "data/seg", "data/seg1", cwd=s5,
         env=env_with_path)
    assert keys(s5 / "data/seg1/wav.scp") == ["rec1"]
    _delete_line(segmented / "segments", 3)  # rec1 loses a segment: still fine
    (segmented / "wav.scp").write_text((segmented / "wav.scp").read_text() + "rec9 x.wav\n")
    r = util("validate_data_dir.sh", "--no-feats", "data/seg", cwd=s5, env=env_with_path,
             ok=False)
    assert "data/seg/utt2spk:3: utterance 'spk1-rec1-0' has no line in data/seg/segments" \
        in r.stderr
    util("fix_data_dir.sh", "data/seg", cwd=s5, env=env_with_path)
    assert keys(segmented / "wav.scp") == ["rec0", "rec1", "rec2"]
    util("validate_data_dir.sh", "--no-feats", "data/seg", cwd=s5, env=env_with_path)


def test_read_table_lenient_notes():
    import tempfile
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(b"b 2\r\n\r\na 1\r\nb 3\r\n")
    try:
        t = read_table(f.name, lenient=True)
        assert [(e.key, e.value) for e in t.entries] == [("b", "2"), ("a", "1")]
        assert any("empty line" in n for n in t.notes)
        assert any("duplicate key 'b'" in n for n in t.notes)
    finally:
        os.unlink(f.name)
