"""Bad input that used to give a wrong result or a bare traceback: each case on real
inputs cut from kaldi_digits in tmp_path, asserting the exit code (or the exception) and a
message that names the file, option or utterance.

- a data dir without cmvn.scp where the model normalises per speaker (was: no CMVN, exit 0);
- NaN/inf in training features (was: "learning rate probably too large", no utterance);
- a truncated feature ark (was: a bare AssertionError);
- --halving-factor out of range (was: accepted and stored in the training state);
- num_jobs 1 beside ali.1.gz and ali.2.gz (was: half the data dropped, exit 0);
- an ali dir whose final.mdl does not fit the lang's phones (was: accepted);
- a full disk while forward.py writes (was: a leaked .tmp and no file named), and while a
  model is saved (was: torch's "basic_ios::clear").
"""
from __future__ import annotations

import errno
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hybridasr.errors import ConfigError, FormatError, HybridAsrError, OutputError
from hybridasr.kaldi.io.table_writer import MatrixWriter
from train_helpers import load_pybin, make_tr_cv

TINY = ["--model=blstm", "--num-layers=1", "--hidden-size=8", "--dropout=0",
        "--seq-ordering=laplace:2", "--max-frames=3000", "--num-workers=0", "--max-iters=1",
        "--progress-every=0", "--num-threads=1"]


def _run(args, env, cwd, timeout=300):
    return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def _tool(repo_dir, name):
    return [sys.executable, str(repo_dir / "pybin" / f"{name}.py")]


def _copy_data_dir(kaldi_digits: Path, name: str, dst: Path, cmvn: bool = True) -> Path:
    """data/<name> with absolute feats/cmvn paths (usable from any directory)."""
    src = kaldi_digits / "data" / name
    dst.mkdir(parents=True)
    for f in ("feats.scp", "cmvn.scp") if cmvn else ("feats.scp",):
        lines = (src / f).read_text().splitlines()
        (dst / f).write_text("".join(f"{k} {kaldi_digits / v}\n" for k, v in
                                     (line.split(" ", 1) for line in lines)))
    for f in ("text", "utt2spk", "spk2utt"):
        (dst / f).write_text((src / f).read_text())
    return dst


def _save_tiny_model(path: Path, norm_means: bool = True) -> None:
    from hybridasr import models
    from hybridasr.features.transform import FeatureTransform

    config = {"model": "blstm", "num_layers": 1, "hidden_size": 8, "proj_size": 0,
              "dropout": 0.0}
    torch.manual_seed(0)
    model = models.build_model(dict(config), 13, 70)
    models.save_model(str(path), model, dict(config),
                      {"transform": FeatureTransform(norm_means=norm_means).to_dict(),
                       "num_pdfs": 70, "input_dim": 13})


def _leftovers(d: Path):
    return sorted(p.name for p in d.iterdir())


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    """kaldi_digits' train data split by speaker into tr and cv (absolute feats/cmvn paths),
    and the mono alignments imported."""
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("reliability"))


# ------------------------------------------------------------------ 1. no cmvn.scp
def test_forward_without_cmvn_scp_names_it_and_the_command(tmp_path, kaldi_digits, repo_dir,
                                                           env_with_path):
    data = _copy_data_dir(kaldi_digits, "test", tmp_path / "data/test", cmvn=False)
    _save_tiny_model(tmp_path / "cmvn.nnet", norm_means=True)
    p = _run(_tool(repo_dir, "forward") + ["cmvn.nnet", "data/test", "ark:ll.ark"],
             env_with_path, tmp_path)
    assert p.returncode == 1, p.stderr
    assert "data/test/cmvn.scp: no such file" in p.stderr
    assert "steps/compute_cmvn_stats.sh data/test" in p.stderr and "--norm-means" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "ll.ark").exists()
    # a model trained without CMVN needs none
    _save_tiny_model(tmp_path / "plain.nnet", norm_means=False)
    p = _run(_tool(repo_dir, "forward") + ["plain.nnet", "data/test", "ark:ll.ark"],
             env_with_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (data / "cmvn.scp").exists() and (tmp_path / "ll.ark").exists()


def test_split_dir_without_cmvn_scp_names_the_data_dir_to_compute_it_for(tmp_path,
                                                                        kaldi_digits):
    """What decode.sh / align.sh pass to forward.py: the message names the data dir and says
    to split again (decode.sh now always lets split_data.sh decide, so a cmvn.scp made later
    reaches the split)."""
    from hybridasr.data.dataset import UtteranceDataset
    from hybridasr.datadir.split import split_data_dir

    data = _copy_data_dir(kaldi_digits, "test", tmp_path / "data/test", cmvn=False)
    split_data_dir(str(data), 1)
    with pytest.raises(FormatError) as e:
        UtteranceDataset.from_data_dir(str(data / "split1" / "1"))
    msg = str(e.value)
    assert f"{data}/split1/1/cmvn.scp: no such file" in msg
    assert f"steps/compute_cmvn_stats.sh {data} " in msg and f"remove {data}/split1" in msg
    # once made, the split is redone (cmvn.scp is newer) and carries it
    (data / "cmvn.scp").write_text("".join(
        f"{k} {kaldi_digits / v}\n" for k, v in
        (line.split(" ", 1) for line in (kaldi_digits / "data/test/cmvn.scp").read_text()
         .splitlines())))
    assert split_data_dir(str(data), 1)[1]
    assert len(UtteranceDataset.from_data_dir(str(data / "split1" / "1"))) == 30


def test_training_cv_dir_without_cmvn_scp_is_an_error(digits, tmp_path):
    tr, cv, ali = digits
    cv2 = tmp_path / "data_cv"
    shutil.copytree(cv, cv2)
    (cv2 / "cmvn.scp").unlink()
    with pytest.raises(FormatError, match=rf"{cv2}/cmvn.scp: no such file.*"
                                          rf"steps/compute_cmvn_stats.sh {cv2} "):
        load_pybin("train").main([*TINY, str(tr), str(cv2), str(ali), str(ali),
                                  str(tmp_path / "exp")])
    assert not (tmp_path / "exp" / "train_state.json").exists()


# ------------------------------------------------------------------ 2. NaN in features
def test_nan_in_training_features_names_the_utterance_and_the_ark(digits, tmp_path, repo_dir,
                                                                  env_with_path):
    """An uncompressed copy of the training features with a NaN in one utterance (a
    compressed ark cannot hold one): train.py exits 1 naming it and its ark, also when a
    loader worker reads it (the error is raised as it was, without the worker's traceback)."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    tr, cv, ali = digits
    tr2 = tmp_path / "data_tr"
    shutil.copytree(tr, tr2)
    ark, bad = tmp_path / "nan_feats.ark", "nicolas_1_3"
    with MatrixWriter(f"ark,scp:{ark},{tr2 / 'feats.scp'}") as w:
        for utt, m in read_matrices(f"scp:{tr / 'feats.scp'}"):
            m = np.array(m, np.float32)
            if utt == bad:
                m[7, 3] = np.nan
                m[9, 0] = np.inf
            w.write(utt, m)
    p = _run(_tool(repo_dir, "train") + [*TINY, "--num-workers=1", tr2, cv, ali, ali,
                                         tmp_path / "exp"], env_with_path, tmp_path)
    assert p.returncode == 1, p.stderr[-3000:]
    assert "DataLoader worker" not in p.stderr
    assert f"utterance {bad} ({ark}:" in p.stderr and "2 NaN or inf feature values" in p.stderr
    assert "first in frame 7" in p.stderr and str(tr2 / "feats.scp") in p.stderr
    assert "probably too large" not in p.stderr and "Traceback" not in p.stderr


# ------------------------------------------------------------------ 3. truncated ark
@pytest.fixture
def truncated(tmp_path, kaldi_digits, monkeypatch):
    """Uncompressed (FM) and compressed (CM, Kaldi's own) copies of kaldi_digits' training
    features, each cut in the middle of the data of its 3rd utterance."""
    from hybridasr.kaldi.io.matrix_reader import read_matrices

    monkeypatch.chdir(kaldi_digits)  # its scp paths are relative to it
    out = {}
    keys = [line.split()[0] for line in (kaldi_digits / "data/train/feats.scp").read_text()
            .splitlines()[:5]]
    mats = dict(read_matrices(f"scp:{kaldi_digits}/data/train/feats.scp"))
    fm = tmp_path / "fm"
    with MatrixWriter(f"ark,scp:{fm}.ark,{fm}.scp") as w:
        for k in keys:
            w.write(k, mats[k])
    cm = tmp_path / "cm"
    src = (kaldi_digits / "mfcc/raw_mfcc_train.1.ark").read_bytes()
    offsets = [int(line.rsplit(":", 1)[1]) for line in
               (kaldi_digits / "data/train/feats.scp").read_text().splitlines()[:5]]
    (tmp_path / "cm.ark").write_bytes(src[:offsets[3]])
    (tmp_path / "cm.scp").write_text("".join(f"{k} {cm}.ark:{o}\n" for k, o in zip(keys, offsets)))
    for name, path in (("FM", fm), ("CM", cm)):
        scp_lines = Path(f"{path}.scp").read_text().splitlines()
        third = int(scp_lines[2].rsplit(":", 1)[1])
        fourth = int(scp_lines[3].rsplit(":", 1)[1])
        data = Path(f"{path}.ark").read_bytes()
        Path(f"{path}.ark").write_bytes(data[:(third + fourth) // 2])
        Path(f"{path}.scp").write_text("\n".join(scp_lines[:4]) + "\n")
        out[name] = (Path(f"{path}.ark"), Path(f"{path}.scp"), keys[2], third)
    return out


@pytest.mark.parametrize("kind", ["FM", "CM"])
def test_truncated_feature_ark_is_a_format_error_naming_file_offset_and_utterance(
        truncated, kind, tmp_path, repo_dir, env_with_path):
    from hybridasr.kaldi.io.matrix_reader import read_matrices
    from hybridasr.kaldi.io.random_access import matrices

    ark, scp, utt, offset = truncated[kind]
    # random access (the dataset's reader)
    table = matrices(str(scp))
    table[table.keys().__iter__().__next__()]  # the first ones are whole
    with pytest.raises(FormatError) as e:
        table[utt]
    msg = str(e.value)
    assert f"{scp}:3: {utt}: {ark}: matrix at offset {offset}: truncated matrix" in msg
    # sequential: the archive itself
    with pytest.raises(FormatError, match=rf"cannot read {ark}: truncated or corrupt after its "
                                          rf"entry 2 \(\w+\)"):
        list(read_matrices(f"ark:{ark}"))
    # a tool: exit 1, the file named, no traceback, no output left
    p = _run(_tool(repo_dir, "compute_cmvn_stats") + [f"scp:{scp}", f"ark:{tmp_path}/c.ark"],
             env_with_path, tmp_path)
    assert p.returncode == 1 and f"{ark}: matrix at offset {offset}" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "AssertionError" not in p.stderr
    assert not list(tmp_path.glob("c.ark*")) and not list(tmp_path.glob(".c.ark*"))


# ------------------------------------------------------------------ 4. --halving-factor
@pytest.mark.parametrize("value,bound", [("0", "> 0"), ("-0.5", "> 0"), ("1.5", "<= 1"),
                                         ("nan", "> 0")])
def test_halving_factor_out_of_range_is_a_config_error_before_anything_is_stored(
        digits, tmp_path, value, bound):
    from hybridasr.train.lr_schedule import make_lr_schedule

    tr, cv, ali = digits
    exp = tmp_path / "exp"
    shown = repr(float(value))  # as the option's float: 0 -> 0.0
    with pytest.raises(ConfigError, match=rf"--halving-factor={shown}: must be {bound}"):
        load_pybin("train").main([*TINY, f"--halving-factor={value}", str(tr), str(cv),
                                  str(ali), str(ali), str(exp)])
    assert not exp.exists()
    with pytest.raises(ConfigError, match="--halving-factor"):
        make_lr_schedule("newbob", halving_factor=float(value))
    assert make_lr_schedule("newbob", halving_factor=1.0).halving_factor == 1.0


def test_halving_factor_out_of_range_in_a_saved_state_is_refused():
    """A training state saved before the check (a bad factor stored) is refused on resume."""
    from hybridasr.train.lr_schedule import make_lr_schedule

    saved = make_lr_schedule("newbob").state_dict()
    s = make_lr_schedule("newbob")
    with pytest.raises(ConfigError, match=r"--halving-factor=0.0 \(saved training state\): "
                                          r"must be > 0"):
        s.load_state_dict(dict(saved, halving_factor=0.0))
    s.load_state_dict(saved)  # a good one loads as before


# ------------------------------------------------------------------ 5. num_jobs vs ali.*.gz
def _two_job_ali_dir(kaldi_digits: Path, dst: Path) -> Path:
    """exp/mono_ali with its one (text) ali.1.gz split into ali.1.gz and ali.2.gz."""
    shutil.copytree(kaldi_digits / "exp/mono_ali", dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    with gzip.open(dst / "ali.1.gz", "rt") as f:
        lines = f.read().splitlines(True)
    half = len(lines) // 2
    for j, part in ((1, lines[:half]), (2, lines[half:])):
        with gzip.open(dst / f"ali.{j}.gz", "wt") as f:
            f.writelines(part)
    return dst


def test_num_jobs_disagreeing_with_the_ali_files_is_an_error(tmp_path, kaldi_digits, repo_dir,
                                                             env_with_path):
    ali = _two_job_ali_dir(kaldi_digits, tmp_path / "mono_ali")
    data = _copy_data_dir(kaldi_digits, "train", tmp_path / "data/train")
    assert (ali / "num_jobs").read_text().strip() == "1"
    p = _run([repo_dir / "steps/import_ali.sh", ali, data, tmp_path / "imp"], env_with_path,
             tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{ali}/num_jobs says 1, but {ali} also holds ali.2.gz" in p.stderr
    assert "Kaldi's scripts read only ali.1..1.gz" in p.stderr
    assert not (tmp_path / "imp" / "targets.scp").exists()
    # with num_jobs right, all 120 utterances are imported
    (ali / "num_jobs").write_text("2\n")
    p = _run([repo_dir / "steps/import_ali.sh", ali, data, tmp_path / "imp"], env_with_path,
             tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((tmp_path / "imp" / "import_report.json").read_text())
    assert report["utterances_imported"] == 120


# ------------------------------------------------------------------ 6. another lang's phones
def test_import_ali_with_lang_of_other_phones_names_both_files(tmp_path, kaldi_digits,
                                                              kaldi_polish, repo_dir,
                                                              env_with_path):
    data = _copy_data_dir(kaldi_digits, "train", tmp_path / "data/train")
    ali, lang = kaldi_digits / "exp/mono_ali", kaldi_polish / "data/lang"
    p = _run([repo_dir / "steps/import_ali.sh", "--lang", lang, ali, data, tmp_path / "imp"],
             env_with_path, tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{lang}/phones.txt and {ali}/phones.txt do not match (154 and 90 phones" in p.stderr
    assert "another lang dir" in p.stderr and not (tmp_path / "imp" / "targets.scp").exists()
    # its own lang passes
    p = _run([repo_dir / "steps/import_ali.sh", "--lang", kaldi_digits / "data/lang", ali, data,
              tmp_path / "imp"], env_with_path, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ali_dir_whose_final_mdl_does_not_fit_its_phones_txt_names_both(tmp_path, kaldi_digits,
                                                                       kaldi_polish, repo_dir,
                                                                       env_with_path):
    """Without --lang: a final.mdl of another lang dir (polish's mono) in digits' ali dir."""
    ali = tmp_path / "mono_ali"
    shutil.copytree(kaldi_digits / "exp/mono_ali", ali)
    os.chmod(ali, 0o755)
    os.chmod(ali / "final.mdl", 0o644)
    shutil.copyfile(kaldi_polish / "exp/mono/40.mdl", ali / "final.mdl")
    data = _copy_data_dir(kaldi_digits, "train", tmp_path / "data/train")
    p = _run([repo_dir / "steps/import_ali.sh", ali, data, tmp_path / "imp"], env_with_path,
             tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{ali}/final.mdl does not fit {ali}/phones.txt" in p.stderr
    assert "154 phones, the phone list 90" in p.stderr


def test_recipe_stage_0_refuses_an_ali_dir_of_another_lang(kaldi_digits_copy, kaldi_polish):
    """run.sh's stage 0 (check_kaldi_dir.py) makes the same check with --lang and --ali."""
    from hybridasr.recipe.kaldi_dir import check_kaldi_dir

    k = kaldi_digits_copy
    args = ("data/train", "data/test", "data/lang", "exp/mono_ali", "exp/mono/graph")
    check_kaldi_dir(str(k), *args)
    shutil.copyfile(kaldi_polish / "data/lang/phones.txt", k / "data/lang/phones.txt")
    with pytest.raises(HybridAsrError, match=rf"{k}/data/lang/phones.txt and "
                                             rf"{k}/exp/mono_ali/phones.txt do not match"):
        check_kaldi_dir(str(k), *args)


# ------------------------------------------------------------------ 7. a full disk
class _Disk:
    """A file system with ``free`` bytes left: writes beyond them fail with ENOSPC, after
    writing what fits (as the kernel does)."""

    def __init__(self, free: int):
        self.free = free


class _FullRaw(io.RawIOBase):
    def __init__(self, path, disk: _Disk):
        self._f = open(path, "wb", buffering=0)  # noqa: SIM115
        self.name = path
        self._disk = disk

    def writable(self):
        return True

    def write(self, b):
        n = min(len(b), self._disk.free)
        if n == 0 and len(b):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._disk.free -= n
        return self._f.write(bytes(b[:n]))

    def fileno(self):
        return self._f.fileno()

    def seekable(self):
        return True

    def tell(self):
        return self._f.tell()

    def close(self):
        self._f.close()
        super().close()


def test_disk_full_during_forward_names_the_file_and_leaves_no_tmp(tmp_path, kaldi_digits,
                                                                   monkeypatch, caplog):
    """forward.py in-process with the output streams on a 'disk' of 20 kB: exit 1, 'no space
    left on device: <ark>', and nothing left in the output dir (no .tmp)."""
    from hybridasr.cli import run_main
    from hybridasr.kaldi.io import streams

    _copy_data_dir(kaldi_digits, "test", tmp_path / "data/test")
    _save_tiny_model(tmp_path / "final.nnet")
    out = tmp_path / "out"
    out.mkdir()
    disk = _Disk(20_000)

    def full_open(path, mode="r", *args, **kwargs):
        if mode == "wb" and str(path).startswith(str(out)):
            return io.BufferedWriter(_FullRaw(path, disk))
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(streams, "open", full_open, raising=False)
    forward = load_pybin("forward")
    with pytest.raises(SystemExit) as e:
        run_main(forward.main, [str(tmp_path / "final.nnet"), str(tmp_path / "data/test"),
                                f"ark,scp:{out}/ll.ark,{out}/ll.scp"])
    assert e.value.code == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [f"no space left on device: {out}/ll.ark"]
    assert disk.free == 0 and _leftovers(out) == []
    # the same with room for the ark but not for the scp (it fails at the end, in commit)
    disk.free = 10**7
    monkeypatch.setattr(streams, "open", lambda path, mode="r", *a, **k: (
        io.BufferedWriter(_FullRaw(path, _Disk(0))) if str(path).endswith(".tmp") and
        ".ll.scp." in str(path) else open(path, mode, *a, **k)), raising=False)
    with pytest.raises(OutputError, match=f"no space left on device: {out}/ll.scp"):
        forward.main([str(tmp_path / "final.nnet"), str(tmp_path / "data/test"),
                      f"ark,scp:{out}/ll.ark,{out}/ll.scp"])
    assert _leftovers(out) == []


def test_disk_full_while_saving_a_model_names_the_file(tmp_path, monkeypatch):
    """torch.save's own stream says only 'basic_ios::clear': with no space left on the file
    system, the error names the model file, and its temporary is gone."""
    from hybridasr import models
    from hybridasr.utils import atomic

    def failing_save(obj, f, *a, **k):
        Path(f).write_bytes(b"partial")
        raise RuntimeError("basic_ios::clear: iostream error")

    class Full:
        f_bavail = f_bfree = 0
        f_frsize = 4096

    monkeypatch.setattr(torch, "save", failing_save)
    monkeypatch.setattr(atomic.os, "statvfs", lambda p: Full())
    model = models.build_model({"model": "mlp", "num_layers": 1, "hidden_size": 4,
                                "dropout": 0.0}, 13, 5)
    with pytest.raises(OutputError, match=rf"no space left on device: {tmp_path}/m.nnet "
                                          r"\(the writer said: basic_ios::clear"):
        models.save_model(str(tmp_path / "m.nnet"), model, {"model": "mlp"}, {})
    assert _leftovers(tmp_path) == []
    # with space left, the same failure is torch's own error, unchanged
    monkeypatch.setattr(atomic.os, "statvfs", lambda p: type("S", (), {
        "f_bavail": 10**6, "f_bfree": 10**6, "f_frsize": 4096})())
    with pytest.raises(RuntimeError, match="basic_ios::clear"):
        models.save_model(str(tmp_path / "m.nnet"), model, {"model": "mlp"}, {})
    assert _leftovers(tmp_path) == []
