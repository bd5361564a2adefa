"""One setting, one name in every tool: decoding takes train.py's --device and --chunking, and
train.py's --seed seeds everything. The old spellings (--use-gpu, --chunk-size and
--chunk-overlap, --init-seed) still work, with one warning naming the new option."""
from __future__ import annotations

import json
import logging
import os
import subprocess

import pytest
import torch

from hybridasr.cli import add_renamed_option, make_parser, options_dict
from hybridasr.decode.forward import ChunkOptions, chunk_options
from hybridasr.errors import ConfigError
from train_helpers import load_pybin as _pybin, make_tr_cv


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _parse(tool, argv, caplog):
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        args = _pybin(tool).get_parser().parse_args(argv)
    return args, _warnings(caplog)


POS = {"forward": ["m.nnet", "data/test", "ark:-"],
       "frame_error_rate": ["m.nnet", "data/test", "targets.scp"]}


@pytest.mark.parametrize("tool", ["forward", "frame_error_rate"])
@pytest.mark.parametrize("old,new", [("no", "cpu"), ("yes", "cuda"), ("optional", "auto"),
                                     ("wait", "auto")])
def test_use_gpu_is_device(tool, old, new, caplog):
    args, warned = _parse(tool, ["--device=cpu", f"--use-gpu={old}", *POS[tool]], caplog)
    assert args.device == new
    assert warned == [f"--use-gpu is deprecated: use --device (--use-gpu={old} is "
                      f"--device={new})"]
    args, warned = _parse(tool, [f"--device={new}", *POS[tool]], caplog)
    assert args.device == new and warned == []
    args, _ = _parse(tool, POS[tool], caplog)
    assert args.device == "cpu"  # the default, as train.py's
    with pytest.raises(ConfigError, match="--use-gpu must be no|yes|optional|wait"):
        _parse(tool, ["--use-gpu=maybe", *POS[tool]], caplog)


def test_device_is_checked_as_train_py_checks_it():
    from hybridasr.decode.forward import device_for

    assert device_for("cpu") == torch.device("cpu")
    assert device_for("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="--device must be cpu|cuda|auto, got 'no'"):
        device_for("no")


@pytest.mark.parametrize("tool", ["forward", "frame_error_rate"])
def test_chunk_size_and_overlap_are_chunking(tool, caplog):
    args, warned = _parse(tool, ["--chunk-size=10", "--chunk-overlap=3", *POS[tool]], caplog)
    note = "(--chunk-size=N --chunk-overlap=M is --chunking=N+2M:N)"
    assert warned == [f"--chunk-size is deprecated: use --chunking {note}",
                      f"--chunk-overlap is deprecated: use --chunking {note}"]
    old = chunk_options(args)
    assert old == ChunkOptions(10, 3)
    args, warned = _parse(tool, ["--chunking=16:10", *POS[tool]], caplog)
    assert warned == [] and chunk_options(args) == old  # 16 frames every 10: 3 each side
    args, _ = _parse(tool, POS[tool], caplog)
    assert chunk_options(args) == ChunkOptions()  # whole utterances
    args, _ = _parse(tool, ["--chunk-size=7", *POS[tool]], caplog)
    assert chunk_options(args) == ChunkOptions(7, 0)
    args, _ = _parse(tool, ["--chunking=16:10", "--chunk-size=10", *POS[tool]], caplog)
    with pytest.raises(ConfigError, match="were both given"):
        chunk_options(args)
    for bad in ("10:3", "5:10", "10", "a:b"):  # odd context, step > size, not size:step
        args, _ = _parse(tool, [f"--chunking={bad}", *POS[tool]], caplog)
        with pytest.raises(ConfigError, match=f"--chunking={bad}"):
            chunk_options(args)


def test_old_spelling_in_a_config_file_warns_once(tmp_path, caplog):
    conf = tmp_path / "decode.conf"
    conf.write_text("--use-gpu=yes\n--use_gpu=no\n")
    args, warned = _parse("forward", [f"--config={conf}", "--use-gpu=optional", *POS["forward"]],
                          caplog)
    assert args.device == "auto" and len(warned) == 1  # the command line wins, one warning


def test_renamed_option_rules(tmp_path):
    p = make_parser("t.py", "t")
    with pytest.raises(ValueError, match="--new must be registered before --old"):
        add_renamed_option(p, "--old", "--new")
    p.add_argument("--new", type=int, default=3)
    add_renamed_option(p, "--old", "--new")
    a = p.parse_args(["--old=5"])
    assert a.new == 5 and isinstance(a.new, int)  # the new option's type
    assert p.parse_args([]).new == 3  # the old spelling never hides the default
    assert options_dict(p, a) == {"new": 5}  # resolved configs use the new name only


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("seeds"))


def test_init_seed_is_seed_which_seeds_the_initial_model(digits, tmp_path, caplog):
    tr, cv, ali = digits
    train = _pybin("train")
    small = ["--model=mlp", "--num-layers=1", "--hidden-size=8", "--dropout=0",
             "--seq-ordering=frame_shuffle", "--max-frames=2048", "--num-workers=0",
             "--max-iters=1", "--progress-every=0", "--num-threads=1"]

    def initial_model(name, *seed):
        exp = tmp_path / name
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert train.main([*small, *seed, str(tr), str(cv), str(ali), str(ali),
                               str(exp)]) == 0
        state = json.loads((exp / "train_state.json").read_text())
        first = state["history"][0]
        assert first["epoch"] == 0
        conf = (exp / "train.conf").read_text()
        assert "--init-seed" not in conf and "--init_seed" not in conf
        sd = torch.load(exp / first["model"], weights_only=True)["state_dict"]
        return sd, conf, _warnings(caplog)

    old, conf, warned = initial_model("old", "--init-seed=5")
    assert [w for w in warned if "deprecated" in w] == [
        "--init-seed is deprecated: use --seed (one --seed now seeds the initialisation, "
        "batch order and dropout)"]
    assert "--seed=5\n" in conf
    new, conf, warned = initial_model("new", "--seed=5")
    assert not [w for w in warned if "deprecated" in w] and "--seed=5\n" in conf
    assert all(torch.equal(old[k], new[k]) for k in old)
    other, _, _ = initial_model("other", "--seed=6")
    assert not all(torch.equal(other[k], new[k]) for k in new)


STAND_IN = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STANDIN_RECORD/$(basename "$0").$$"
"""


def test_decode_sh_old_and_new_spellings(tmp_path, repo_dir, kaldi_digits, env_with_path):
    """steps/nnet/decode.sh passes --device and --chunking to forward.py (stand-ins record the
    command lines); --use-gpu and --chunk-size/--chunk-overlap still work, and warn."""
    bin_dir, rec = tmp_path / "bin", tmp_path / "rec"
    bin_dir.mkdir()
    rec.mkdir()
    for prog in ("forward.py", "decode_faster_mapped.py", "latgen_faster_mapped.py"):
        (bin_dir / prog).write_text(STAND_IN)
        (bin_dir / prog).chmod(0o755)
    graph, data, exp = tmp_path / "graph", tmp_path / "data", tmp_path / "exp"
    for d in (graph, data, exp):
        d.mkdir()
    (graph / "HCLG.fst").write_text("")
    (graph / "words.txt").write_text("<eps> 0\n")
    for name in ("feats.scp", "utt2spk", "spk2utt"):
        (data / name).write_text((kaldi_digits / "data/test" / name).read_text())
    for name in ("final.nnet", "final.mdl", "ali_train_pdf.counts"):
        (exp / name).write_text("")
    env = dict(env_with_path, STANDIN_RECORD=str(rec),
               PATH=f"{bin_dir}{os.pathsep}{env_with_path['PATH']}")

    def decode(*opts):
        for f in rec.iterdir():
            f.unlink()
        p = subprocess.run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "1",
                            "--decoder", "embedded", "--skip-scoring", "true", *opts,
                            str(graph), str(data), str(exp / "decode")],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        (fwd,) = rec.glob("forward.py.*")
        argv = fwd.read_text().splitlines()
        return [a for a in argv if a.startswith(("--device", "--chunking", "--use-gpu",
                                                  "--chunk-"))], p.stderr

    got, err = decode()
    assert got == ["--device=cpu"] and "deprecated" not in err
    got, err = decode("--device", "auto", "--chunking", "16:10")
    assert got == ["--device=auto", "--chunking=16:10"] and "deprecated" not in err
    got, err = decode("--use-gpu", "optional", "--chunk-size", "10", "--chunk-overlap", "3")
    assert got == ["--device=auto", "--chunking=16:10"]
    assert "warning: --use-gpu is deprecated: use --device (--use-gpu optional is --device " \
           "auto)" in err
    assert "warning: --chunk-size/--chunk-overlap are deprecated: use --chunking" in err
    assert err.count("deprecated") == 2
    p = subprocess.run([str(repo_dir / "steps/nnet/decode.sh"), "--use-gpu", "maybe",
                        str(graph), str(data), str(exp / "decode")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "bad --use-gpu maybe" in p.stderr
