"""The recipe's shape, as Kaldi users know it: egs/kaldi_dir/s5/run.sh is its configuration
section, a short usage and the stage blocks (at most 300 lines, the first stage block on the
first screen after the configuration); each optional system is a local/run_*.sh (the chain
model: local/chain/run_tdnn.sh) with a usage of its own; egs/digits/s5/run.sh is a thin user of
the generic recipe; every option the recipe had is still one. Runs no stage (seconds)."""
from __future__ import annotations

import re
import subprocess

import pytest

# every option of the any-Kaldi-dir recipe (its interface: none may go away)
OPTIONS = """stage stop_stage kaldi_dir train test lang ali graph gmm_decode use_kaldi_feats
feat_type feat_config nj model_config batching_config schedule_config device nproc parallel
train_opts torchrun_opts decode_opts ref_normalize exp_name realign_iters realign_init
realign_prior_scale realign_train_opts align_opts decode_sets flat_objective flat_rounds
flat_model_config flat_batching_config flat_train_opts flat_first_subset num_leaves lm_arpa
lm_text lm_order seq_epochs seq_min_utts seq_criterion seq_frame_smoothing seq_opts restart
oov_word ctc ctc_units_config ctc_model_config ctc_train_config ctc_acwt ctc_decode_opts
ctc_scoring_opts ctc_beam_size speed_perturb fmllr chain chain_opts chain_train_opts""".split()
SYSTEMS = ("run_realign.sh", "run_sequence.sh", "run_ctc.sh", "run_flatstart.sh",
           "chain/run_tdnn.sh")


def config_vars(text: str) -> list:
    block = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    return re.findall(r"^([a-z_][a-z0-9_]*)=", block, flags=re.M)


@pytest.fixture(scope="module")
def recipe(repo_dir):
    return repo_dir / "egs" / "kaldi_dir" / "s5"


def test_run_sh_is_its_stage_blocks(recipe):
    text = (recipe / "run.sh").read_text()
    lines = text.splitlines()
    assert len(lines) <= 300, len(lines)
    end = next(i for i, l in enumerate(lines) if l == "# End configuration section.")
    first = next(i for i, l in enumerate(lines) if l.startswith("if run_stage 0"))
    assert first - end <= 30, f"{first - end} lines between the configuration and stage 0"
    stages = [int(m) for m in re.findall(r"^if run_stage (\d)", text, flags=re.M)]
    assert stages == sorted(stages) and set(stages) == set(range(6)), stages
    # no shell function of its own: they live in utils/recipe_lib.sh, steps/ and local/
    assert not re.search(r"^\s*[a-z_]+\(\) *\{", text, flags=re.M)


def test_every_option_is_still_there(recipe):
    have = config_vars((recipe / "run.sh").read_text())
    assert sorted(set(OPTIONS) - set(have)) == []
    assert len(have) == len(set(have))


@pytest.mark.parametrize("script", SYSTEMS)
def test_each_optional_system_has_its_own_usage(recipe, env_with_path, script):
    path = recipe / "local" / script
    text = path.read_text()
    assert config_vars(text), f"{script} has no configuration section"
    assert "recipe_lock" not in text  # (run.sh holds the recipe dir's lock while it runs them)
    assert f"/{script} " in (recipe / "run.sh").read_text()  # (run.sh calls it)
    p = subprocess.run([f"local/{script}"], cwd=recipe, env=env_with_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Usage: local/" + script in p.stderr and " e.g.: " in p.stderr


def test_digits_is_a_thin_user_of_the_generic_recipe(repo_dir, env_with_path):
    s5 = repo_dir / "egs" / "digits" / "s5"
    text = (s5 / "run.sh").read_text()
    assert len(text.splitlines()) <= 15 and 'egs/kaldi_dir/s5/run.sh"' in text
    assert (s5 / "conf").resolve() == (repo_dir / "egs/kaldi_dir/s5/conf").resolve()
    p = subprocess.run(["./run.sh", "--help"], cwd=s5, env=env_with_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "Usage: ./run.sh [options]" in p.stderr, p.stderr
    p = subprocess.run(["./run.sh", "--no-such-option", "1"], cwd=s5, env=env_with_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "invalid option --no-such-option" in p.stderr


def test_the_generic_recipe_asks_for_its_kaldi_dir(recipe, env_with_path, tmp_path):
    p = subprocess.run(["./run.sh", "--stop-stage", "0"], cwd=recipe, env=env_with_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "--kaldi-dir is required" in p.stderr, p.stderr
    assert not (recipe / "data").exists()
