"""One setting, one name in every tool: decoding takes train.py's --device and --chunking (the
old --use-gpu, --chunk-size and --chunk-overlap are gone: unknown options, an error naming
them), and train.py's --seed seeds everything (the old --init-seed is gone as well)."""
from __future__ import annotations

import json
import logging
import os
import subprocess

import pytest
import torch

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
OLD = ["--use-gpu=yes", "--chunk-size=10", "--chunk-overlap=3"]


@pytest.mark.parametrize("tool", ["forward", "frame_error_rate"])
def test_device_is_train_pys_and_the_old_spellings_are_gone(tool, caplog, capsys, tmp_path):
    for device in ("cpu", "cuda", "auto"):
        args, warned = _parse(tool, [f"--device={device}", *POS[tool]], caplog)
        assert args.device == device and warned == []
    args, _ = _parse(tool, POS[tool], caplog)
    assert args.device == "cpu"  # the default, as train.py's
    for old in OLD:
        with pytest.raises(SystemExit):
            _parse(tool, [old, *POS[tool]], caplog)
        assert f"unrecognized arguments: {old}" in capsys.readouterr().err
        conf = tmp_path / "decode.conf"
        conf.write_text(old + "\n")
        with pytest.raises(ConfigError, match=f"unknown option {old.split('=')[0]}"):
            _parse(tool, [f"--config={conf}", *POS[tool]], caplog)


def test_device_is_checked_as_train_py_checks_it():
    from hybridasr.decode.forward import device_for

    assert device_for("cpu") == torch.device("cpu")
    assert device_for("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="--device must be cpu|cuda|auto, got 'no'"):
        device_for("no")


@pytest.mark.parametrize("tool", ["forward", "frame_error_rate"])
def test_chunking(tool, caplog):
    args, warned = _parse(tool, ["--chunking=16:10", *POS[tool]], caplog)
    assert warned == [] and chunk_options(args) == ChunkOptions(10, 3)  # 3 each side
    args, _ = _parse(tool, ["--chunking=7:7", *POS[tool]], caplog)
    assert chunk_options(args) == ChunkOptions(7, 0)
    args, _ = _parse(tool, POS[tool], caplog)
    assert chunk_options(args) == ChunkOptions()  # whole utterances
    for bad in ("10:3", "5:10", "10", "a:b"):  # odd context, step > size, not size:step
        args, _ = _parse(tool, [f"--chunking={bad}", *POS[tool]], caplog)
        with pytest.raises(ConfigError, match=f"--chunking={bad}"):
            chunk_options(args)


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("seeds"))


def test_seed_seeds_the_initial_model_and_init_seed_is_gone(digits, tmp_path, caplog, capsys):
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
        sd = torch.load(exp / first["model"], weights_only=True)["state_dict"]
        return sd, conf, _warnings(caplog)

    with pytest.raises(SystemExit):
        train.get_parser().parse_args(["--init-seed=5", *map(str, (tr, cv, ali, ali)), "x"])
    assert "unrecognized arguments: --init-seed=5" in capsys.readouterr().err
    first, conf, warned = initial_model("first", "--seed=5")
    assert not [w for w in warned if "deprecated" in w] and "--seed=5\n" in conf
    again, _, _ = initial_model("again", "--seed=5")
    assert all(torch.equal(first[k], again[k]) for k in first)
    other, _, _ = initial_model("other", "--seed=6")
    assert not all(torch.equal(other[k], first[k]) for k in first)


STAND_IN = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STANDIN_RECORD/$(basename "$0").$$"
"""


def test_decode_sh_passes_what_it_is_given(tmp_path, repo_dir, kaldi_digits, env_with_path):
    """steps/nnet/decode.sh passes --device and --chunking to forward.py (stand-ins record the
    command lines), --prior-scale only when given (forward.py's default is the one); the old
    --use-gpu and --chunk-size/--chunk-overlap are invalid options."""
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
        return subprocess.run([str(repo_dir / "steps/nnet/decode.sh"), "--nj", "1",
                               "--decoder", "embedded", "--lattices", "false",
                               "--skip-scoring", "true", *opts,
                               str(graph), str(data), str(exp / "decode")],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)

    def forward_opts(*opts):
        p = decode(*opts)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "warning" not in p.stderr
        (fwd,) = rec.glob("forward.py.*")
        return [a for a in fwd.read_text().splitlines()
                if a.startswith(("--device", "--chunking", "--prior-scale"))]

    assert forward_opts() == ["--device=cpu"]
    assert forward_opts("--device", "auto", "--chunking", "16:10", "--prior-scale", "0.5") == \
        ["--prior-scale=0.5", "--device=auto", "--chunking=16:10"]
    for old, value in (("--use-gpu", "yes"), ("--chunk-size", "10"), ("--chunk-overlap", "3")):
        p = decode(old, value)
        assert p.returncode != 0 and f"invalid option {old}" in p.stderr, p.stderr
