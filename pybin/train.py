#!/usr/bin/env python3
"""Trains a hybrid acoustic model (BLSTM, LSTM or MLP over pdf-ids) with frame cross-entropy
and newbob-style learning-rate control; resumes where a previous run stopped."""
import os
import sys

from hybridasr.cli import add_bool, add_options, make_parser, run_main


def get_parser():
    from hybridasr.data.options import BATCHING_CONFIG, data_option_sets
    from hybridasr.models import MODEL_CONFIG, model_options
    from hybridasr.train.lr_schedule import SCHEDULE_CONFIG, schedule_options
    from hybridasr.train.options import TrainConfig

    p = make_parser(
        "train.py",
        "Frame cross-entropy training of a hybrid acoustic model on Kaldi features and\n"
        "imported alignments (steps/import_ali.sh). Each epoch starts from the best model;\n"
        "newbob accepts or rejects it on the cross-validation loss. Run it again to resume.\n"
        "Under torchrun, --parallel=ddp or --parallel=average train on several processes.",
        usage="train.py [options] <data-tr> <data-cv> <ali-tr-dir> <ali-cv-dir> <exp-dir>",
        example="train.py --model-config=conf/model/blstm.conf "
                "--batching-config=conf/batching/laplace.conf --schedule-config=conf/schedule/"
                "newbob.conf data/train_tr90 data/train_cv10 exp/ali_train exp/ali_train "
                "exp/blstm")
    p.add_config_file_option(*MODEL_CONFIG)
    add_options(p, model_options(), "model")
    for title, declared in data_option_sets():
        add_options(p, declared, title)
    p.add_config_file_option(*BATCHING_CONFIG)
    p.add_config_file_option(*SCHEDULE_CONFIG)
    add_options(p, schedule_options(), "learning-rate schedule")
    add_options(p, TrainConfig, "training")
    add_bool(p, "--restart", False, "start the training over: remove what an earlier run "
             "wrote in <exp-dir> (nnet/, train_state.json, final.nnet, metrics.jsonl, ...; "
             "nothing else); false: resume it (a finished run is left as it is)")
    p.add_argument("data_tr")
    p.add_argument("data_cv")
    p.add_argument("ali_tr")
    p.add_argument("ali_cv")
    p.add_argument("exp_dir")
    return p


def main(argv=None):
    from hybridasr.data.options import data_config_from_args
    from hybridasr.models import model_config_from_args
    from hybridasr.train.lr_schedule import lr_schedule_from_args
    from hybridasr.train.options import train_config_from_args

    parser = get_parser()
    args = parser.parse_args(argv)
    dcfg = data_config_from_args(args)
    mcfg = model_config_from_args(args)
    tcfg = train_config_from_args(args)
    schedule = lr_schedule_from_args(args)
    os.makedirs(args.exp_dir, exist_ok=True)
    restart, args.restart = args.restart, None  # an action, not a setting: not in train.conf
    if int(os.environ.get("RANK", "0")) == 0:  # one training per exp dir (rank 0 holds it)
        from hybridasr.utils.dir_lock import dir_lock

        with dir_lock(args.exp_dir, "training"):
            return _train(parser, args, dcfg, mcfg, tcfg, schedule, restart)
    return _train(parser, args, dcfg, mcfg, tcfg, schedule, restart)


def _train(parser, args, dcfg, mcfg, tcfg, schedule, restart):
    from hybridasr.cli import options_dict, save_resolved_config
    from hybridasr.train.trainer import TrainInputs, save_config_json, train

    if int(os.environ.get("RANK", "0")) == 0:
        save_resolved_config(parser, args, os.path.join(args.exp_dir, "train.conf"))
        save_config_json(os.path.join(args.exp_dir, "config.json"), data=dcfg.to_dict(),
                         model=mcfg, train=tcfg.__dict__, options=options_dict(parser, args))
    state = train(TrainInputs(args.data_tr, args.data_cv, args.ali_tr, args.ali_cv,
                              args.exp_dir), dcfg, mcfg, tcfg, schedule, restart=restart)
    import json
    import logging

    best = [h for h in state["history"] if h.get("model") == state["best"]]
    summary = {"best": state["best"], "epochs": state["epoch"],
               "train_seconds": round(state.get("train_seconds", 0.0), 2)}
    if best:
        summary.update(cv_loss=best[-1].get("cv_loss"), cv_fer=best[-1].get("cv_fer"))
    logging.getLogger("train.py").info("done: %s", json.dumps(summary))
    return 0


def main_as_process(argv=None):
    """``main``; a finished torchrun worker then leaves without the interpreter's teardown,
    in which a joinable gloo thread could abort it after its training was done ("terminate
    called without an active exception": seen under load, with the process group already
    destroyed)."""
    rc = main(argv)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc or 0)
    return rc


if __name__ == "__main__":
    run_main(main_as_process)
