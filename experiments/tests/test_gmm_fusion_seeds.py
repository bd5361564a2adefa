"""experiments/gmm_fusion_seeds.py's report (the runs themselves are the recipe's: too slow
here): per seed the test and cv errors of the network alone, the GMM alone and both, their
totals, and paired bootstrap lines of both against each; the sums at --weights beside."""
from __future__ import annotations

from experiments import gmm_fusion_seeds as gfs


def test_report_tables_and_intervals(monkeypatch, tmp_path):
    # seed -> system -> set -> utterance -> (errors, words)
    def figures(s5, words_txt, weights=()):
        seed = int(str(s5).rsplit("_s", 1)[1])
        test = {"net": {"a": (2, 3), "b": (1, 3)}, "gmm": {"a": (1, 3), "b": (1, 3)},
                "sum": {"a": (0, 3), "b": (seed - 1, 3)}}
        test.update({f"w{w}": {"a": (1, 3), "b": (1, 3)} for w in weights})
        return {k: {"test": v, "train_cv10": {"c": (0, 2)}} for k, v in test.items()}

    monkeypatch.setattr(gfs, "figures", figures)
    for seed in (1, 2):  # the weight the recipe's decoding used, from its stage4.json
        d = tmp_path / f"digits_s{seed}/exp/blstm"
        d.mkdir(parents=True)
        (d / "stage4.json").write_text('{"decode_opts": "--nj 2 --gmm-dir x --gmm-weight 0.67 '
                                       '--gmm-feats y"}')
    text = gfs.report(["digits"], [1, 2], tmp_path, 120.0, weights=["0.5"])
    lines = text.splitlines()
    assert "## digits" in lines
    net = next(ln for ln in lines if ln.startswith("| the network alone |"))
    assert net.split(" | ")[1:3] == ["3/6, 0/2", "3/6, 0/2"]
    assert "50.00 (6/12)" in net and "0.00 (0/4)" in net and "37.50 (6/16)" in net
    both = next(ln for ln in lines if ln.startswith("| the defaults: both"))
    assert both.split(" | ")[1:3] == ["0/6, 0/2", "1/6, 0/2"] and "6.25 (1/16)" in both
    # both minus the network: -5 errors of 16 words; minus the GMM: -3
    assert "the defaults' GMM weight: 0.67." in text and "--weights 0.5`" in text
    assert "- the defaults minus the network alone: -5 errors of 16 words (-31.25 points)" in text
    assert ("- the defaults minus the GMM alone (weight 1): -3 errors of 16 words "
            "(-18.75 points)") in text
    w = next(ln for ln in lines if ln.startswith("| both, the GMM at 0.5 |"))
    assert w.split(" | ")[1:3] == ["2/6, 0/2", "2/6, 0/2"]
    assert "- the defaults minus both, the GMM at 0.5: -3 errors of 16 words" in text
    assert "(this invocation 2 minutes" in text
