"""Data options: every conf/batching file parses into a valid DataConfig; precedence."""
from __future__ import annotations

import pytest

from hybridasr.cli import add_options, make_parser
from hybridasr.data.config import DataConfig
from hybridasr.data.epoch import plan_epoch
from hybridasr.data.options import BATCHING_CONFIG, data_config_from_args, data_option_sets
from hybridasr.errors import ConfigError

CONFS = sorted((__import__("pathlib").Path(__file__).resolve().parents[1]
                / "conf" / "batching").glob("*.conf"))


def parser():
    p = make_parser("train.py", "test")
    for title, declared in data_option_sets():
        add_options(p, declared, title)
    p.add_config_file_option(*BATCHING_CONFIG)
    return p


def test_every_strategy_has_a_conf():
    names = {c.stem for c in CONFS}
    assert {"random", "sorted", "sorted_reverse", "bucketing", "laplace", "optimal_buckets",
            "chunking", "tbptt", "frame_shuffle"} <= names


RECIPE_CONF = CONFS[0].parents[2] / "egs" / "digits" / "s5" / "conf" / "batching.conf"


@pytest.mark.parametrize("conf", CONFS + [RECIPE_CONF],
                         ids=lambda p: "recipe" if p == RECIPE_CONF else p.stem)
def test_batching_conf_gives_a_working_plan(conf):
    c = data_config_from_args(parser().parse_args([f"--batching-config={conf}"]))
    lengths = {f"u{i}": 50 + (i * 37) % 900 for i in range(300)}
    lengths.update(long_a=2071, long_b=2700, long_c=6000, long_d=12000)  # over --max-frames
    shares = [plan_epoch(lengths, c, epoch=1, rank=r, world_size=2) for r in range(2)]
    assert shares[1] and sum(p.num_batches for p in shares[1]) == \
        sum(p.num_batches for p in shares[0])
    # every utterance is in the epoch (whole, split into pieces, or cut into chunks/windows)
    seen = {it.utt for s in shares for p in s for it in p.items if it is not None}
    assert seen == set(lengths)


def test_precedence_and_cmvn_opts(tmp_path):
    main = tmp_path / "train.conf"
    main.write_text("--seq-ordering=sorted\n--max-frames=100\n--splice=5\n")
    batching = tmp_path / "b.conf"
    batching.write_text("--seq-ordering=laplace:8\n--max-frames=200\n")
    a = parser().parse_args([f"--config={main}", f"--batching-config={batching}",
                             "--max-frames=300", "--cmvn-opts=--norm-vars=true"])
    c = data_config_from_args(a)
    assert (c.seq_ordering, c.max_frames, c.transform.splice) == ("laplace:8", 300, 5)
    assert c.transform.norm_means and c.transform.norm_vars
    assert DataConfig.from_dict(c.to_dict()) == c
    assert data_config_from_args(
        parser().parse_args(["--norm-means=false"])).transform.norm_means is False
    with pytest.raises(ConfigError):
        data_config_from_args(parser().parse_args(["--cmvn-opts=--norm-vars=maybe"]))
    with pytest.raises(ConfigError):
        data_config_from_args(parser().parse_args(["--seq-ordering=shuffled"]))
