"""A strategy that needs a model capability fails at start with the reason.
TBPTT carries recurrent state from window to window: only --model=lstm carries state."""
from __future__ import annotations

import logging
import subprocess

import pytest

from hybridasr.data.batching import REGISTERED
from hybridasr.data.config import DataConfig
from hybridasr.errors import ConfigError
from hybridasr.models.factory import MODELS, model_class


def cfg(**kw):
    return DataConfig(**kw)


def check_model_fits(config, model_class, model_name):
    config.strategy.check_model(model_class, model_name)


TBPTT = dict(seq_ordering="tbptt:8:20", max_frames=160)


def test_models_declare_their_capabilities():
    assert {m: (model_class(m).carries_state, model_class(m).recurrent) for m in MODELS} == \
        {"lstm": (True, True), "blstm": (False, True), "mlp": (False, False),
         "tdnnf": (False, True)}
    assert cfg(**TBPTT).strategy.needs_stateful_model
    assert [n for n, cls in REGISTERED.items() if cls.needs_stateful_model] == ["tbptt"]
    with pytest.raises(ConfigError, match="--model=cnn"):
        model_class("cnn")


@pytest.mark.parametrize("model", ["blstm", "mlp"])
def test_tbptt_without_a_stateful_model_is_refused(model):
    with pytest.raises(ConfigError, match=rf"--seq-ordering=tbptt:8:20 .*--model=lstm \(got "
                                          rf"--model={model}"):
        check_model_fits(cfg(**TBPTT), model_class(model), model)


def test_what_can_train_passes_and_frame_level_recurrent_warns(caplog):
    check_model_fits(cfg(**TBPTT), model_class("lstm"), "lstm")
    with caplog.at_level(logging.WARNING):
        for model in MODELS:  # chunks and whole utterances suit every model
            for kw in (dict(chunking="100:50"), dict(seq_ordering="laplace:4"), {}):
                check_model_fits(cfg(**kw), model_class(model), model)
        check_model_fits(cfg(seq_ordering="frame_shuffle", max_frames=256),
                         model_class("mlp"), "mlp")
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        check_model_fits(cfg(seq_ordering="frame_shuffle", max_frames=256),
                         model_class("blstm"), "blstm")
    assert len(caplog.records) == 1 and "--model=blstm" in caplog.text and \
        "sees no context" in caplog.text


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    from train_helpers import make_tr_cv

    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("digits_caps"))


@pytest.mark.parametrize("model_conf", ["blstm.conf", "mlp.conf"])
def test_train_sh_tbptt_with_a_model_without_state_fails_at_once(
        repo_dir, env_with_path, kaldi_digits, digits, tmp_path, model_conf):
    tr, cv, ali = digits
    exp = tmp_path / "exp"
    p = subprocess.run(["bash", str(repo_dir / "steps/nnet/train.sh"),
                        "--batching-config", str(repo_dir / "conf/batching/tbptt.conf"),
                        "--model-config", str(repo_dir / "conf/model" / model_conf),
                        tr, cv, kaldi_digits / "data/lang", ali, ali, exp],
                       cwd=tmp_path, env=env_with_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0
    assert "--model=lstm" in p.stderr, p.stdout + p.stderr
    log = (exp / "log" / "train.log").read_text()
    assert "needs a model that carries state" in log
    # refused before any data was read or any model built
    assert not (exp / "nnet" / "epoch0.nnet").exists()
    assert "cross-validation" not in log and "global_stats" not in log
