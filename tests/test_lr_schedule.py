"""Learning-rate control, step by step on scripted CV losses (Kaldi nnet1's newbob rules,
RETURNN's variants, plateau), state round trips and options from a --schedule-config."""
from __future__ import annotations

import math

import pytest

from hybridasr.cli import add_options, make_parser
from hybridasr.errors import ConfigError
from hybridasr.train.lr_schedule import (SCHEDULE_CONFIG, lr_schedule_from_args,
                                         make_lr_schedule, schedule_options)


def add_lr_schedule_options(p):  # as train.py registers them
    p.add_config_file_option(*SCHEDULE_CONFIG)
    add_options(p, schedule_options(), "learning-rate schedule")


def run(s, initial, losses):
    s.start(initial)
    out = []
    for e, loss in enumerate(losses, 1):
        d = s.epoch_done(e, loss + 0.1, loss)
        out.append((d.accept, round(d.lr, 10), d.stop))
        if d.stop:
            break
    return out


def test_newbob_accepts_rejects_halves_and_stops_as_nnet1():
    s = make_lr_schedule("newbob", learning_rate=0.008)
    # 2.0 -> 1.5 (25% better), 1.6 rejected (rel. impr. 0 < 0.01: halving starts and the
    # rate halves at once), 1.45 accepted (3.3% better, halving goes on), 1.449 accepted
    # (0.07% < 0.1% while halving: stop, at the rate of that epoch)
    got = run(s, 2.0, [1.5, 1.6, 1.45, 1.449, 1.0])
    assert got == [(True, 0.008, False), (False, 0.004, False), (True, 0.002, False),
                   (True, 0.002, True)]
    assert s.best == pytest.approx(1.449)


def test_newbob_rejection_keeps_the_best_and_relative_improvement_is_against_it():
    s = make_lr_schedule("newbob", learning_rate=1.0)
    s.start(10.0)
    d = s.epoch_done(1, 0, 11.0)
    assert not d.accept and "rejected" in d.reason and s.best == 10.0 and s.halving
    assert d.lr == 0.5
    d = s.epoch_done(2, 0, 9.0)  # 10% better than the best accepted (10.0), not than 11.0
    assert d.accept and d.lr == 0.25 and not d.stop


def test_newbob_keep_lr_iters():
    s = make_lr_schedule("newbob", learning_rate=1.0, keep_lr_iters=2, min_iters=3)
    got = run(s, 1.0, [1.2, 1.3, 1.3, 1.3, 1.3])
    # epochs 1-2: accepted though worse (best becomes 1.3), rate kept; epoch 3: 1.3 is not
    # < 1.3: rejected (min_iters forces nothing), rel. impr. 0 -> halving starts and the rate
    # halves; epoch 4: rejected, halving and rel. impr. 0 < end, min_iters 3 > 4 is false: stop
    assert got == [(True, 1.0, False), (True, 1.0, False), (False, 0.5, False),
                   (False, 0.5, True)]
    assert s.best == 1.3


def test_newbob_min_iters_postpones_the_stop_without_halving():
    s = make_lr_schedule("newbob", learning_rate=1.0, min_iters=5)
    got = run(s, 1.0, [0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    # 1: 10% better; 2: rejected, halving starts (0.5); 3, 4: would stop but min_iters 5 > iter
    # (the script's `continue`: the rate is not halved); 5: 5 > 5 false -> stop
    assert got == [(True, 1.0, False), (False, 0.5, False), (False, 0.5, False),
                   (False, 0.5, False), (False, 0.5, True)]
    d = make_lr_schedule("newbob", learning_rate=1.0, min_iters=3)
    assert run(d, 1.0, [0.9, 0.9, 0.9, 0.9]) == [(True, 1.0, False), (False, 0.5, False),
                                                  (False, 0.5, True)]


def test_newbob_max_iters():
    s = make_lr_schedule("newbob", learning_rate=1.0, max_iters=3)
    got = run(s, 10.0, [9.0, 8.0, 7.0, 6.0])
    assert got == [(True, 1.0, False), (True, 1.0, False), (True, 1.0, True)]


def test_state_round_trip_continues_identically():
    losses = [1.5, 1.6, 1.45, 1.44, 1.43, 1.4299]
    a = make_lr_schedule("newbob", learning_rate=0.008)
    ref = run(a, 2.0, losses)
    b = make_lr_schedule("newbob", learning_rate=0.008)
    b.start(2.0)
    first = [b.epoch_done(e, 0, x) for e, x in enumerate(losses[:2], 1)]
    c = make_lr_schedule("newbob", learning_rate=0.008)  # the same options (a changed one
    # is applied from the next epoch: test_resume_applies_changed_options_from_the_next_epoch)
    c.load_state_dict(b.state_dict())
    rest = []
    for e, x in enumerate(losses[2:], 3):
        d = c.epoch_done(e, 0, x)
        rest.append((d.accept, round(d.lr, 10), d.stop))
        if d.stop:
            break
    assert [(d.accept, round(d.lr, 10), d.stop) for d in first] + rest == ref


def test_diverged_rejects_and_halves():
    s = make_lr_schedule("newbob", learning_rate=0.01)
    s.start(3.0)
    d = s.diverged(1)
    assert not d.accept and d.lr == 0.005 and "NaN" in d.reason and s.lr == 0.005
    d = s.epoch_done(2, math.nan, math.nan)
    assert not d.accept and d.lr == 0.0025


def test_newbob_rel_decays_when_the_relative_change_is_above_threshold():
    s = make_lr_schedule("newbob_rel", learning_rate=1.0)  # threshold -0.01, decay 0.5
    got = run(s, 10.0, [9.0, 8.95, 8.0, 8.5])
    # epoch 1: no earlier epoch (the initial loss is not one: RETURNN has no epoch 0);
    # (new - old) / |new|: -0.56% > -1% (decay), -11.9% (no), +5.9% (decay); all kept
    assert got == [(True, 1.0, False), (True, 0.5, False), (True, 0.5, False),
                   (True, 0.25, False)]


def test_newbob_rel_divides_by_the_new_loss_unless_div_by_old():
    # 10.0 -> 9.9: (9.9 - 10) / 9.9 = -1.0101% <= -1%: no decay; / 10.0 = -1% > -1%: decay
    s = make_lr_schedule("newbob_rel", learning_rate=1.0)
    assert run(s, None, [10.0, 9.9]) == [(True, 1.0, False), (True, 1.0, False)]
    s = make_lr_schedule("newbob_rel", learning_rate=1.0, newbob_relative_error_div_by_old=True)
    assert run(s, None, [10.0, 9.9]) == [(True, 1.0, False), (True, 0.5, False)]


def test_newbob_rel_growth_relative_lr_and_min_epochs_per_lr():
    s = make_lr_schedule("newbob_rel", learning_rate=1.0, newbob_learning_rate_growth=1.5)
    # -25% (grow), 0% (decay), -25% (grow)
    assert run(s, None, [4.0, 3.2, 3.2, 2.56]) == [(True, 1.0, False), (True, 1.5, False),
                                                   (True, 0.75, False), (True, 1.125, False)]
    # relative to lr: at lr 0.5 a -0.8% change counts as -1.6% (<= -1%: no decay)
    s = make_lr_schedule("newbob_rel", learning_rate=1.0,
                         learning_rate_control_relative_error_relative_lr=True)
    got = run(s, None, [10.0, 10.0, 9.92, 9.92 * 0.992])
    # 2: 0% -> decay to 0.5; 3: epoch 3 ran at 0.5: -0.806% / 0.5 = -1.6%: keep;
    # 4: -0.806% / 0.5: keep
    assert got == [(True, 1.0, False), (True, 0.5, False), (True, 0.5, False),
                   (True, 0.5, False)]
    s = make_lr_schedule("newbob_rel", learning_rate=1.0,
                         learning_rate_control_min_num_epochs_per_new_lr=2)
    # a rate changes only when the last 2 epochs both ran at it
    got = run(s, None, [5.0, 5.0, 5.0, 5.0, 5.0])
    assert got == [(True, 1.0, False), (True, 0.5, False), (True, 0.5, False),
                   (True, 0.25, False), (True, 0.25, False)]


def test_newbob_abs_and_min_learning_rate():
    s = make_lr_schedule("newbob_abs", learning_rate=1.0, newbob_error_threshold=-0.1,
                         min_learning_rate=0.3)
    got = run(s, 5.0, [4.5, 4.45, 4.0, 4.0])
    assert got == [(True, 1.0, False), (True, 0.5, False), (True, 0.5, False),
                   (True, 0.3, False)]


def test_newbob_multi_epoch_averages_relative_changes():
    s = make_lr_schedule("newbob_multi_epoch", learning_rate=1.0, newbob_multi_num_epochs=2,
                         newbob_multi_update_interval=2)
    # the rate of epoch e+1 changes when (e+1) % 2 == 1: after epochs 2 and 4. After 2:
    # one change, (8.1 - 9) / 8.1 = -11%: no decay; after 4: window 8.1, 8.2, 8.15:
    # mean(+1.22%, -0.61%) = +0.3% > -1%: decay
    got = run(s, 10.0, [9.0, 8.1, 8.2, 8.15])
    assert got == [(True, 1.0, False), (True, 1.0, False), (True, 1.0, False),
                   (True, 0.5, False)]


def test_newbob_multi_epoch_defaults_update_every_num_epochs():
    s = make_lr_schedule("newbob_multi_epoch", learning_rate=1.0)  # 5 epochs, interval 5
    assert s.num_epochs == 5 and s.update_interval == 5
    got = run(s, None, [5.0] * 6 + [4.0] * 5)
    # the rate changes only after epochs 5 and 10; after 5 (window: epochs 1-5, mean 0 >
    # -1%): decay
    lrs = [lr for _, lr, _ in got]
    assert lrs[:4] == [1.0] * 4 and lrs[4:9] == [0.5] * 5
    # after epoch 10 (window: epochs 5-10): 0%, (4 - 5) / 4 = -25%, 0%, 0%, 0%: mean -5% <= -1%
    assert lrs[9] == 0.5
    with pytest.raises(ConfigError):
        make_lr_schedule("newbob_multi_epoch", learning_rate=1.0,
                         newbob_relative_error_grow_threshold=0.0)


def test_returnn_state_round_trip_through_json():
    import json
    losses = [5.0, 4.9, 4.95, 4.0, 3.99, 3.5, 3.49]
    kw = dict(learning_rate=1.0, newbob_multi_num_epochs=2, newbob_multi_update_interval=1)
    ref = run(make_lr_schedule("newbob_multi_epoch", **kw), None, losses)
    a = make_lr_schedule("newbob_multi_epoch", **kw)
    a.start(None)
    first = [a.epoch_done(e, 0, x) for e, x in enumerate(losses[:3], 1)]
    b = make_lr_schedule("newbob_multi_epoch", **kw)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    rest = [b.epoch_done(e, 0, x) for e, x in enumerate(losses[3:], 4)]
    assert [(d.accept, round(d.lr, 10), d.stop) for d in first + rest] == ref


def test_constant_and_plateau():
    assert run(make_lr_schedule("constant", learning_rate=0.1, max_iters=2), 1.0,
               [2.0, 3.0, 4.0]) == [(True, 0.1, False), (True, 0.1, True)]
    s = make_lr_schedule("plateau", learning_rate=1.0, plateau_patience=1,
                         min_learning_rate=0.3)
    got = run(s, 1.0, [0.9, 0.95, 0.96, 0.8, 0.85, 0.85])
    assert got == [(True, 1.0, False), (False, 1.0, False), (False, 0.5, False),
                   (True, 0.5, False), (False, 0.5, False), (False, 0.25, True)]
    # as torch: an improvement within the threshold is accepted but counts as a bad epoch
    s = make_lr_schedule("plateau", learning_rate=1.0, plateau_patience=1,
                         plateau_threshold=0.1)
    got = run(s, 1.0, [0.95, 0.94, 0.8])
    assert got == [(True, 1.0, False), (True, 0.5, False), (True, 0.5, False)]


def test_exponential_is_kaldis_chain_schedule():
    """Fixed epochs, every one kept, the rate from --learning-rate to --final-learning-rate
    geometrically; a NaN epoch scales the rest of the curve by --halving-factor; its state
    goes on identically after a restart."""
    s = make_lr_schedule("exponential", learning_rate=0.002, final_learning_rate=0.0002,
                         max_iters=4)
    assert s.lr == 0.002
    got = run(s, 1.0, [2.0, 3.0, 4.0, 5.0, 6.0])  # worse cv losses: kept all the same
    rates = [0.002 * 0.1 ** (e / 3) for e in (1, 2, 3)]
    assert got == [(True, round(r, 10), False) for r in rates] + [(True, 0.0002, True)]
    s = make_lr_schedule("exponential", learning_rate=0.01, max_iters=3)  # default: a tenth
    assert [round(s.rate_of_epoch(e), 10) for e in (1, 2, 3)] == [0.01, round(0.01 * 0.1 **
                                                                              0.5, 10), 0.001]
    s.start(1.0)
    d = s.diverged(1)
    assert not d.accept and not d.stop and d.lr == pytest.approx(0.5 * 0.01 * 0.1 ** 0.5)
    again = make_lr_schedule("exponential", learning_rate=0.01, max_iters=3)
    again.load_state_dict(s.state_dict())
    assert again.epoch_done(2, 1.0, 1.0).lr == pytest.approx(0.5 * 0.001)
    assert make_lr_schedule("exponential", learning_rate=0.5, max_iters=1).rate_of_epoch(1) \
        == 0.5


def test_options_from_a_schedule_config_file(tmp_path):
    conf = tmp_path / "newbob.conf"
    conf.write_text("--lr-schedule=newbob\n--learning-rate=0.004\n--start-halving-impr=0.02\n")
    p = make_parser("t", "test")
    add_lr_schedule_options(p)
    args = p.parse_args([f"--schedule-config={conf}", "--learning-rate=0.002"])
    s = lr_schedule_from_args(args)
    assert s.name == "newbob" and s.lr == 0.002 and s.start_halving_impr == 0.02
    rel = tmp_path / "rel.conf"
    rel.write_text("--lr-schedule=newbob_rel\n--newbob-relative-error-div-by-old=true\n"
                   "--newbob_learning_rate_decay=0.7\n")
    s = lr_schedule_from_args(p.parse_args([f"--schedule-config={rel}"]))
    assert s.name == "newbob_rel" and s.div_by_old is True and s.decay == 0.7
    s = lr_schedule_from_args(p.parse_args(["--lr-schedule=newbob_multi_epoch",
                                            "--newbob-multi-num-epochs=3"]))
    assert s.update_interval == 3 and s.grow_threshold == s.threshold == -0.01
    bad = tmp_path / "bad.conf"
    bad.write_text("--lr-schedule=newbob\n--halfing-factor=0.5\n")
    with pytest.raises(ConfigError, match=r"bad.conf:2"):
        p.parse_args([f"--schedule-config={bad}"])
    with pytest.raises(ConfigError, match="unknown --lr-schedule"):
        make_lr_schedule("newbobby", learning_rate=1.0)


def test_repo_schedule_confs_load(repo_dir):
    from hybridasr.cli import add_options
    from hybridasr.data.options import data_option_sets

    p = make_parser("t", "test")
    add_lr_schedule_options(p)
    for title, declared in data_option_sets():  # newbob.conf also sets how many updates
        add_options(p, declared, title)  # an epoch has at least
    p.add_argument("--optimizer")
    p.add_argument("--dropout-schedule")  # a trainer option (chain.conf: Kaldi's)
    for conf in sorted((repo_dir / "conf" / "schedule").glob("*.conf")) + \
            [repo_dir / "egs/digits/s5/conf/schedule.conf"]:
        args = p.parse_args([f"--schedule-config={conf}"])
        s = lr_schedule_from_args(args)
        assert s.lr > 0, conf
        if conf.name in ("newbob.conf", "schedule.conf"):
            assert args.min_batches_per_epoch == 100, conf


def test_resolved_config_reads_back(tmp_path):
    from hybridasr.cli import save_resolved_config
    p = make_parser("t", "test")
    add_lr_schedule_options(p)
    args = p.parse_args(["--lr-schedule=newbob_multi_epoch", "--newbob-multi-num-epochs=3",
                         "--newbob-relative-error-div-by-old=true"])
    save_resolved_config(p, args, str(tmp_path / "resolved.conf"))
    again = p.parse_args([f"--config={tmp_path / 'resolved.conf'}"])
    a, b = lr_schedule_from_args(args), lr_schedule_from_args(again)
    assert a.state_dict() == b.state_dict() and b.update_interval == 3 and b.div_by_old


def test_resume_applies_changed_options_from_the_next_epoch(caplog):
    """Resuming with another --halving-factor / --max-iters / --learning-rate: the new values
    are used from the next epoch and logged; the rest of the saved state is kept."""
    import logging

    from hybridasr.train.lr_schedule import make_lr_schedule

    first = make_lr_schedule("newbob", learning_rate=0.002, halving_factor=0.5, max_iters=10)
    first.start(2.0)
    first.epoch_done(1, 1.9, 1.5)
    first.epoch_done(2, 1.8, 1.499)  # small improvement: halving starts, rate 0.001
    assert first.lr == 0.001 and first.halving
    saved = first.state_dict()
    same = make_lr_schedule("newbob", learning_rate=0.002, halving_factor=0.5, max_iters=10)
    same.load_state_dict(saved)
    assert same.state_dict() == saved  # nothing changed: exactly the saved state
    resumed = make_lr_schedule("newbob", learning_rate=0.002, halving_factor=0.25,
                               max_iters=3)
    with caplog.at_level(logging.INFO):
        resumed.load_state_dict(saved)
    assert resumed.halving_factor == 0.25 and resumed.max_iters == 3
    assert resumed.lr == 0.001 and resumed.halving and resumed.best == saved["best"]
    assert "--halving-factor=0.25 (the saved training had 0.5)" in caplog.text
    assert "--max-iters=3 (the saved training had 10)" in caplog.text
    d = resumed.epoch_done(3, 1.7, 1.49)
    assert d.lr == 0.001 * 0.25 and d.stop  # the new factor, and the new last epoch
    # a new learning rate becomes the current one
    lr = make_lr_schedule("newbob", learning_rate=0.0004, halving_factor=0.5, max_iters=10)
    lr.load_state_dict(saved)
    assert lr.lr == 0.0004 and lr.halving
