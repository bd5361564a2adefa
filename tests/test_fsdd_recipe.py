"""egs/fsdd/s5, the recipe from raw recordings: the connected-digit corpus generator
(local/make_corpus.py) on a few real FSDD recordings per speaker, the dict dir, and stages 0-1
of run.sh (corpus, lang dir, LM, G.fst) on a copy of the recipe."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parents[1]
S5 = REPO / "egs" / "fsdd" / "s5"
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TRAIN = ["jackson", "nicolas", "theo", "george"]
TEST = ["yweweler", "lucas"]
PER_SPK = 20  # recordings per speaker in the small corpora: indices 0 and 1 of every digit
SPEED = ("--speed-factors", "0.9 1.1")


@pytest.fixture(scope="module")
def recordings(shared_dir) -> Path:
    d = shared_dir / "data" / "fsdd" / "recordings"
    if not d.is_dir():
        pytest.skip(f"needs {d} (FSDD in ../shared), which is absent")
    return d


def make_corpus(recordings, out: Path, env, *opts, seed=777, check=True):
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, str(S5 / "local" / "make_corpus.py"), "--seed", str(seed),
                        "--max-per-speaker", str(PER_SPK), *opts, str(recordings),
                        str(out / "wav"), str(out / "data")],
                       env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def read_table(path: Path) -> dict:
    return dict(line.split(maxsplit=1) for line in path.read_text().splitlines())


def files_under(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, recordings, env_with_path):
    out = tmp_path_factory.mktemp("fsdd_corpus")
    make_corpus(recordings, out, env_with_path, *SPEED)
    return out


def test_same_seed_gives_the_same_bytes_another_seed_other_ones(corpus, tmp_path, recordings,
                                                                env_with_path):
    again = tmp_path / "again"
    make_corpus(recordings, again, env_with_path, *SPEED)
    a, b = files_under(corpus / "wav"), files_under(again / "wav")
    assert sorted(a) == sorted(b) and len([n for n in a if n.endswith(".wav")]) > 20
    assert a == b  # every wav, parts.txt and corpus.json byte for byte
    for split in ("train", "test", "train_sp"):
        for name in ("text", "utt2spk", "spk2utt"):
            assert (corpus / "data" / split / name).read_bytes() == \
                (again / "data" / split / name).read_bytes()
        # wav.scp differs by the absolute directory only
        scp_a = (corpus / "data" / split / "wav.scp").read_text()
        scp_b = (again / "data" / split / "wav.scp").read_text()
        assert scp_a.replace(str(corpus.resolve()), "ROOT") == \
            scp_b.replace(str(again.resolve()), "ROOT")
    other = tmp_path / "other"
    make_corpus(recordings, other, env_with_path, *SPEED, seed=778)
    c = files_under(other / "wav")
    assert (corpus / "wav" / "parts.txt").read_bytes() != (other / "wav" / "parts.txt").read_bytes()
    common = sorted(set(a) & set(c) - {"corpus.json", "parts.txt"})
    assert sum(a[n] != c[n] for n in common) > len(common) // 2
    assert (corpus / "data/train/text").read_text() != (other / "data/train/text").read_text()


def test_a_speaker_subset_leaves_the_speakers_utterances_as_they_were(corpus, tmp_path,
                                                                       recordings, env_with_path):
    sub = tmp_path / "sub"
    make_corpus(recordings, sub, env_with_path, "--train-speakers", "theo",
                "--test-speakers", "lucas")  # and no speed perturbation
    for spk in ("theo", "lucas"):
        a = files_under(corpus / "wav" / spk)
        assert a and a == files_under(sub / "wav" / spk)
    assert read_table(sub / "data/train/utt2spk").keys() == \
        {u for u, s in read_table(corpus / "data/train/utt2spk").items() if s == "theo"}


def test_speakers_are_disjoint_and_every_recording_is_used_once(corpus, recordings):
    spk = {split: Counter(read_table(corpus / "data" / split / "utt2spk").values())
           for split in ("train", "test")}
    assert sorted(spk["train"]) == sorted(TRAIN) and sorted(spk["test"]) == sorted(TEST)
    assert not set(spk["train"]) & set(spk["test"])
    used = Counter()
    text = {**read_table(corpus / "data/train/text"), **read_table(corpus / "data/test/text")}
    for line in (corpus / "wav" / "parts.txt").read_text().splitlines():
        utt, *fields = line.split()
        names = fields[1::3]
        used.update(names)
        # the recordings are the utterance's speaker's, and the text names their digits
        assert all(n.split("_")[1] == utt.split("-")[0] for n in names)
        assert text[utt].split() == [WORDS[int(n.split("_")[0])] for n in names]
        assert 1 <= len(names) <= 7
    assert set(used.values()) == {1}
    expected = {f"{d}_{s}_{i}" for s in TRAIN + TEST for d in range(10) for i in range(2)}
    assert set(used) == expected
    assert all((recordings / f"{n}.wav").exists() for n in expected)
    assert sum(len(t.split()) for t in text.values()) == 20 * 6


def test_an_utterance_is_its_recordings_and_pauses_sample_for_sample(corpus, recordings):
    wav = {**read_table(corpus / "data/train/wav.scp"), **read_table(corpus / "data/test/wav.scp")}
    lines = (corpus / "wav" / "parts.txt").read_text().splitlines()
    assert len(lines) == len(wav)
    for line in lines:
        utt, *fields = line.split()
        path = Path(wav[utt])
        assert path.is_absolute() and path.is_file()
        y, rate = sf.read(path, dtype="int16")
        assert rate == 8000 and y.ndim == 1 and sf.info(path).subtype == "PCM_16"
        pauses = [int(p) for p in fields[0::3]]
        lengths = [int(n) for n in fields[2::3]]
        assert len(pauses) == len(lengths) + 1
        assert all(400 <= p <= 2400 for p in pauses)  # 50-300 ms at 8 kHz
        assert len(y) == sum(pauses) + sum(lengths)   # the duration: parts + pauses
        pos = 0
        for p, name, n in zip(pauses, fields[1::3], lengths):
            pos += p
            x, _ = sf.read(recordings / f"{name}.wav", dtype="int16")
            assert len(x) == n
            assert np.array_equal(y[pos:pos + n], x), (utt, name)  # copied unchanged
            pos += n
        # pauses are low-level noise, not digital silence
        assert np.std(y[:pauses[0]].astype(float)) > 0
    summary = (corpus / "wav" / "corpus.json").read_text()
    assert '"utterances"' in summary


def load_make_corpus():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_corpus", S5 / "local" / "make_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_speed_perturbed_copies(corpus, recordings, tmp_path, env_with_path):
    train = read_table(corpus / "data/train/utt2spk")
    sp = read_table(corpus / "data/train_sp/utt2spk")
    expected = {}
    for u, s in train.items():
        expected.update({u: s, f"sp0.9-{u}": f"sp0.9-{s}", f"sp1.1-{u}": f"sp1.1-{s}"})
    assert sp == expected
    text, text_sp = read_table(corpus / "data/train/text"), read_table(corpus / "data/train_sp/text")
    assert all(text_sp[u] == text[u.split("-", 1)[1] if u.startswith("sp") else u] for u in text_sp)
    wav_sp = read_table(corpus / "data/train_sp/wav.scp")
    assert not (corpus / "data/test_sp").exists()
    mod = load_make_corpus()
    for u in sorted(train)[:5]:
        y, _ = sf.read(wav_sp[u], dtype="int16")
        for f in (0.9, 1.1):
            z, rate = sf.read(wav_sp[f"sp{f:g}-{u}"], dtype="int16")
            assert rate == 8000 and len(z) == round(len(y) / f)
            assert np.array_equal(z, mod.speed_perturb(y, f))
        # slowed down, then sped up again: the recording back (nothing was band-limited away)
        back = mod.speed_perturb(mod.speed_perturb(y, 0.9), 1 / 0.9).astype(float)
        assert len(back) == len(y)
        err = np.sqrt(np.mean((back - y) ** 2)) / np.sqrt(np.mean(y.astype(float) ** 2))
        assert err < 0.01, err
    # the part of train_sp that belongs to a split of train: each original with its copies
    half = tmp_path / "half"
    half.mkdir()
    keep = sorted(train)[::2]
    (tmp_path / "keep").write_text("".join(f"{u}\n" for u in keep))
    for cmd in ([str(REPO / "utils/subset_data_dir.sh"), "--utt-list", str(tmp_path / "keep"),
                 str(corpus / "data/train"), str(half)],
                [str(S5 / "local/perturbed_split.sh"), str(half), str(corpus / "data/train_sp"),
                 str(tmp_path / "half_sp")]):
        p = subprocess.run(cmd, cwd=S5, env=env_with_path, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    got = sorted(read_table(tmp_path / "half_sp/utt2spk"))
    assert got == sorted([*keep, *(f"sp0.9-{u}" for u in keep), *(f"sp1.1-{u}" for u in keep)])


def test_data_dirs_validate_and_words_are_in_the_lexicon(corpus, tmp_path, env_with_path):
    for split in ("train", "test", "train_sp"):
        d = corpus / "data" / split
        p = subprocess.run([str(REPO / "utils" / "validate_data_dir.sh"), "--no-feats", str(d)],
                           env=env_with_path, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "Successfully validated" in p.stderr + p.stdout
    p = subprocess.run([str(S5 / "local" / "prepare_dict.sh"), str(tmp_path / "dict")],
                       env=env_with_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lexicon = {line.split()[0] for line in (tmp_path / "dict/lexicon.txt").read_text().splitlines()}
    assert lexicon == set(WORDS) | {"!SIL", "<UNK>"}
    words = {w for split in ("train", "test")
             for t in read_table(corpus / "data" / split / "text").values() for w in t.split()}
    assert words <= lexicon and words == set(WORDS)
    assert (tmp_path / "dict/silence_phones.txt").read_text().split() == ["SIL", "SPN"]
    assert (tmp_path / "dict/optional_silence.txt").read_text().split() == ["SIL"]
    nonsil = (tmp_path / "dict/nonsilence_phones.txt").read_text().split()
    assert len(nonsil) == 19 and "SIL" not in nonsil


def test_bad_options_are_refused(tmp_path, recordings, env_with_path):
    p = make_corpus(recordings, tmp_path / "a", env_with_path, "--test-speakers", "theo",
                    check=False)
    assert p.returncode != 0 and "both" in p.stderr
    p = make_corpus(recordings, tmp_path / "b", env_with_path, "--test-speakers", "nobody",
                    check=False)
    assert p.returncode != 0 and "no recordings of speaker nobody" in p.stderr


def recipe_copy(dst: Path) -> Path:
    """A copy of egs/fsdd/s5 elsewhere (links to the toolkit's steps/ and utils/)."""
    dst.mkdir(parents=True)
    for name in ("run.sh", "cmd.sh", "path.sh"):
        shutil.copy2(S5 / name, dst / name)
    shutil.copytree(S5 / "conf", dst / "conf", symlinks=False)
    shutil.copytree(S5 / "local", dst / "local", ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(REPO / "steps", dst / "steps")
    os.symlink(REPO / "utils", dst / "utils")
    return dst


def test_stages_0_and_1_make_the_corpus_lang_dir_lm_and_g(tmp_path, recordings, env_with_path):
    s5 = recipe_copy(tmp_path / "s5")
    env = dict(env_with_path, HYBRIDASR_ROOT=str(REPO))
    args = ["./run.sh", "--recordings", str(recordings), "--corpus-opts",
            f"--max-per-speaker {PER_SPK}", "--stop-stage", "1"]
    p = subprocess.run(args, cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout + p.stderr
    assert "===== stage 0:" in out and "===== stage 1:" in out and "===== stage 2:" not in out
    for f in ("data/train/wav.scp", "data/test/text", "data/train_sp/wav.scp",
              "data/local/dict/lexicon.txt",
              "data/lang/L.fst", "data/lang/L_disambig.fst", "data/lang/topo",
              "data/lang/phones.txt", "data/local/lm/lm.arpa.gz", "data/lang_test/G.fst",
              "data/lang_test/L.fst", "exp/stage_times.txt"):
        assert (s5 / f).is_file() and (s5 / f).stat().st_size > 0, f
    words = read_table(s5 / "data/lang_test/words.txt")
    assert set(WORDS) <= set(words) and "<UNK>" in words
    assert (s5 / "data/lang/oov.txt").read_text().split() == ["<UNK>"]
    # the audio is the recipe's own, under its data/wav
    first = read_table(s5 / "data/train/wav.scp")["jackson-0001"]
    assert first.startswith(str(s5)) and "/data/wav/jackson/" in first
    # G.fst: the ten digits, each reachable (read with the toolkit's FST reader)
    import kaldifst
    g = kaldifst.StdVectorFst.read(str(s5 / "data/lang_test/G.fst"))
    labels = {int(a.olabel) for s in range(g.num_states) for a in kaldifst.ArcIterator(g, s)}
    assert {int(words[w]) for w in WORDS} <= labels
    # a second run redoes nothing; another corpus is refused while data/ holds this one
    lfst = (s5 / "data/lang/L.fst").stat().st_mtime_ns
    p = subprocess.run(args, cwd=s5, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "already hold the corpus" in p.stdout and "data/lang and data/lang_test exist" in p.stdout
    assert (s5 / "data/lang/L.fst").stat().st_mtime_ns == lfst
    p = subprocess.run([*args, "--corpus-seed", "1"], cwd=s5, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode != 0 and "other options" in p.stderr
