"""A batching strategy is one declaration: a strategy defined here alone, with an option of its
own, is chosen from a conf file and trains an epoch through pybin/train.py."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import List

import pytest

from hybridasr.data.batching import (REGISTERED, BatchingStrategy, BatchPlan, Item,
                                     register_strategy, unregister_strategy)
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch, plan_stats
from hybridasr.errors import ConfigError
from hybridasr.options import option
from train_helpers import load_pybin, make_tr_cv

NAME = "toy_reverse_alphabetical"


@dataclass
class ToyOptions:
    toy_batch_utts: int = option(2, "utterances per batch", minimum=1)


class ReverseAlphabetical(BatchingStrategy):
    """Utterances in reverse alphabetical order, ``--toy-batch-utts`` to a batch."""
    Options = ToyOptions
    made: List[List[BatchPlan]] = []  # every epoch's batches, as made

    def make_batches(self, items: List[Item], rng) -> List[BatchPlan]:
        order = sorted(items, key=lambda it: it.utt, reverse=True)
        n = self.options.toy_batch_utts
        batches = [BatchPlan(order[i:i + n]) for i in range(0, len(order), n)]
        ReverseAlphabetical.made.append(batches)
        return batches


@pytest.fixture
def toy():
    ReverseAlphabetical.made = []
    register_strategy(NAME)(ReverseAlphabetical)
    yield ReverseAlphabetical
    unregister_strategy(NAME)


def test_the_declaration_is_all_the_library_needs(toy):
    from hybridasr.cli import add_options, make_parser
    from hybridasr.data.options import data_config_from_args, data_option_sets

    p = make_parser("t.py", "t")
    for title, declared in data_option_sets():
        add_options(p, declared, title)
    help_text = p.format_help()
    assert NAME in help_text and "--toy-batch-utts" in help_text
    c = data_config_from_args(p.parse_args([f"--seq-ordering={NAME}", "--toy-batch-utts=3"]))
    assert c.strategy_options == ToyOptions(3) and c.to_dict()["toy_batch_utts"] == 3
    assert c.strategy.options is c.strategy_options  # the strategy reads the typed options
    assert DataConfig.from_dict(c.to_dict()) == c
    lengths = {f"u{i:02d}": 10 + i for i in range(10)}
    plans = plan_epoch(lengths, c, epoch=1)
    assert [[it.utt for it in p.items] for p in plans] == \
        [["u09", "u08", "u07"], ["u06", "u05", "u04"], ["u03", "u02", "u01"], ["u00"]]
    ev = c.for_evaluation()  # evaluation: whole utterances, sorted, no strategy options
    assert ev.seq_ordering == "sorted" and "toy_batch_utts" not in ev.to_dict()
    with pytest.raises(ConfigError, match="--toy-batch-utts=0: must be >= 1"):
        data_config_from_args(p.parse_args([f"--seq-ordering={NAME}", "--toy-batch-utts=0"]))
    with pytest.raises(ConfigError, match=f"--seq-ordering={NAME}:4: .*takes no argument"):
        DataConfig(seq_ordering=f"{NAME}:4")


def test_a_second_declaration_of_an_option_must_agree(toy):
    @dataclass
    class Clash:
        toy_batch_utts: int = option(5, "another default", minimum=1)

    class Other(ReverseAlphabetical):
        Options = Clash

    with pytest.raises(ValueError, match="--toy-batch-utts .*declare it once"):
        register_strategy("toy_other")(Other)
    assert "toy_other" not in REGISTERED
    assert DataConfig(seq_ordering=NAME).strategy_options.toy_batch_utts == 2


def test_capabilities_come_from_the_declaration(toy):
    class Windows(ReverseAlphabetical):
        splits_utterances = True

    register_strategy("toy_windows")(Windows)
    try:
        with pytest.raises(ConfigError, match="--seq-ordering=toy_windows cuts the "
                                              "utterances itself; drop --chunking"):
            DataConfig(seq_ordering="toy_windows", chunking="20:10")
    finally:
        unregister_strategy("toy_windows")


@pytest.fixture(scope="module")
def digits(tmp_path_factory, kaldi_digits):
    return make_tr_cv(kaldi_digits, tmp_path_factory.mktemp("toy"))


def test_toy_strategy_from_a_conf_file_trains_an_epoch(toy, digits, tmp_path):
    tr, cv, ali = digits
    conf = tmp_path / "toy.conf"
    conf.write_text(f"--seq-ordering={NAME}\n--toy-batch-utts=7\n--max-frames=1000\n")
    exp = tmp_path / "exp"
    argv = ["--model=mlp", "--num-layers=1", "--hidden-size=8", "--dropout=0",
            f"--batching-config={conf}", "--num-workers=0", "--max-iters=1",
            "--progress-every=0", "--num-threads=1",
            str(tr), str(cv), str(ali), str(ali), str(exp)]
    assert load_pybin("train").main(argv) == 0
    # the toy's batches were trained on: its option shaped them
    assert toy.made, "the toy strategy was never asked for batches"
    batches = toy.made[-1]
    train_utts = sorted((tr / "utt2spk").read_text().split()[::2])
    assert [it.utt for b in batches for it in b.items] == train_utts[::-1]
    assert [len(b.items) for b in batches[:-1]] == [7] * (len(batches) - 1)
    history = [json.loads(line) for line in (exp / "metrics.jsonl").read_text().splitlines()]
    epoch1 = [h for h in history if h["epoch"] == 1]
    assert epoch1 and epoch1[0]["padding_ratio"] == pytest.approx(
        plan_stats(batches)["padding_ratio"])
    assert (exp / epoch1[0]["model"]).exists()
    conf_out = (exp / "train.conf").read_text()
    assert f"--seq-ordering={NAME}\n" in conf_out and "--toy-batch-utts=7\n" in conf_out
