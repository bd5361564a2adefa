"""The training driver: data, model, newbob-style epochs with acceptance/rejection,
checkpoints and resumption, on one process or several (``torchrun``).

Each epoch starts from the best model so far and its optimizer state, read back from disk,
with random state seeded by (seed, epoch): a run killed at any moment and started again ends
with exactly the epochs of an uninterrupted run.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Optional

import torch

from hybridasr.data.config import DataConfig
from hybridasr.data.loader import make_batch_iterator
from hybridasr.errors import ConfigError, FormatError
from hybridasr.features.transform import FeatureTransform
from hybridasr.train import checkpoint as ckpt
from hybridasr.train import partial
from hybridasr.train.schedules.dropout import apply_dropout_schedule
from hybridasr.train.distributed import (DistInfo, ParameterAverager, barrier,
                                         broadcast_parameters, init_distributed, shutdown,
                                         stop_on_lost_peer)
from hybridasr.train.objectives import (check_objective, make_objective, objective_class,
                                        read_objective_data)
from hybridasr.train.loop import EpochStats, run_epoch
from hybridasr.train.metrics import plot_curves, write_metrics
from hybridasr.train.optimizer import make_optimizer, set_learning_rate
from hybridasr.train.options import TrainConfig

log = logging.getLogger(__name__)


@dataclasses.dataclass
class TrainInputs:
    data_tr: str
    data_cv: str
    ali_tr: str   # an imported alignment dir (targets.scp, num_pdfs): steps/import_ali.sh
    ali_cv: str
    exp_dir: str


def cv_config(dcfg: DataConfig) -> DataConfig:
    """Cross-validation batches: whole utterances of any length sorted by length, each
    utterance once (``DataConfig.for_evaluation``)."""
    return dcfg.for_evaluation()


class Trainer:
    def __init__(self, inputs: TrainInputs, dcfg: DataConfig, mcfg: dict, tcfg: TrainConfig,
                 schedule, info: Optional[DistInfo] = None, restart: bool = False):
        from hybridasr.models.factory import model_class

        dcfg.strategy.check_model(model_class(mcfg["model"]), mcfg["model"])  # TBPTT: lstm
        check_objective(tcfg, dcfg.strategy, bool(dcfg.chunks))
        self.inp, self.dcfg, self.mcfg, self.tcfg, self.schedule = inputs, dcfg, mcfg, tcfg, \
            schedule
        self.info = info or init_distributed(tcfg.device, tcfg.parallel)
        self.dev = self.info.device
        self.exp = inputs.exp_dir
        if restart or ckpt.read_state(self.exp) is None:  # nothing of an earlier run is used
            if self.info.is_main:
                ckpt.remove_run(self.exp)
            barrier(self.info)
        os.makedirs(os.path.join(self.exp, "nnet"), exist_ok=True)
        self._setup_data()
        self.in_epoch = partial.check_enabled(
            tcfg.checkpoint_every, tcfg.checkpoint_every_batches,
            "they are made by single-process training only" if self.info.active else
            "the model carries recurrent state between batches (TBPTT)"
            if dcfg.strategy.needs_stateful_model else "")

    # --- data -------------------------------------------------------------------------
    def _setup_data(self) -> None:
        """The objective's data (``Objective.read_data``: frame targets, or what it reads
        instead), the feature statistics, then the objective over that data."""
        inp = self.inp
        self.transform = FeatureTransform.from_options(self.dcfg.transform)
        use_cmvn = self.transform.norm_means
        data = read_objective_data(self.tcfg, inp, self.transform, use_cmvn,
                                   self.exp if self.info.is_main else "")
        self.num_pdfs, self.tr, self.cv = data.num_outputs, data.train, data.cv
        for name, ds in (("training", self.tr), ("cross-validation", self.cv)):
            if len(ds) == 0:
                raise FormatError(f"the {name} set has no utterances with targets "
                                  f"({ds.feats_scp}, {ds.targets_scp})")
        if self.tr.feature_dim() != self.cv.feature_dim():
            raise FormatError(f"feature dims differ: {self.tr.feats_scp} has "
                              f"{self.tr.feature_dim()}, {self.cv.feats_scp} "
                              f"{self.cv.feature_dim()}")
        stats = os.path.join(self.exp, "global_stats.json")
        if self.transform.needs_fit:
            fit = dict(max_utts=self.dcfg.global_norm_utts or None, seed=self.dcfg.seed)
            if self.info.is_main:
                self.tr.fit_transform(stats, **fit)
            barrier(self.info)
            if not self.info.is_main:
                self.tr.fit_transform(stats, **fit)
        self.input_dim = self.transform.output_dim(self.tr.feature_dim())
        self.cv_dcfg = cv_config(self.dcfg)
        self.objective = make_objective(self.tcfg, data, inp)
        self.errors_are = objective_class(self.tcfg.objective).errors_are

    def meta(self, **extra) -> dict:
        m = {"transform": self.transform.to_dict(), "num_pdfs": self.num_pdfs,
             "data_config": self.dcfg.to_dict(), "objective": self.tcfg.objective}
        m.update(extra)
        return m

    # --- model files ------------------------------------------------------------------
    def _load(self, rel: str):
        from hybridasr.models import load_model

        model, meta = load_model(os.path.join(self.exp, rel), self.dev)
        if int(meta["input_dim"]) != self.input_dim or int(meta["num_outputs"]) != self.num_pdfs:
            raise FormatError(f"{os.path.join(self.exp, rel)} has input dim {meta['input_dim']} "
                              f"and {meta['num_outputs']} outputs; the data give "
                              f"{self.input_dim} and {self.num_pdfs}")
        return model

    def _init_from(self, model, path: str) -> None:
        """``model`` takes the weights of the model file ``path`` (``--init-model``)."""
        from hybridasr.models import load_model, model_class, normalize_config

        init, meta = load_model(path, self.dev)
        if meta.get("ensemble_members"):  # (train.sh --num-models): one network goes on
            log.warning("--init-model=%s is an ensemble of %d networks: training goes on from "
                        "the first (%s) alone", path, len(meta["ensemble_members"]),
                        meta["ensemble_members"][0])
            init = init.members[0]
        # dropout (and a model's other training-only options) shapes no parameter: a model may
        # go on training with another rate (e.g. sequence training without it)
        free = {"dropout", *getattr(model_class(self.mcfg["model"]), "training_only_options",
                                    ())}
        shape = lambda c: {k: v for k, v in normalize_config(c).items()  # noqa: E731
                           if k not in free}
        if shape(meta["model_config"]) != shape(self.mcfg):
            raise ConfigError(f"--init-model={path} is a {meta['model_config']} model; this "
                              f"training builds {self.mcfg}: use the same model config")
        if int(meta["input_dim"]) != self.input_dim or int(meta["num_outputs"]) != self.num_pdfs:
            raise ConfigError(f"--init-model={path} has input dim {meta['input_dim']} and "
                              f"{meta['num_outputs']} outputs; the data give {self.input_dim} "
                              f"and {self.num_pdfs}")
        model.load_state_dict(init.state_dict())
        log.info("initial weights from %s", path)

    def _save(self, model, optimizer, epoch: int, rejected: bool, **meta) -> str:
        from hybridasr.models import save_model

        path = ckpt.model_path(self.exp, epoch, rejected)
        if self.info.is_main:
            save_model(path, model, self.mcfg, self.meta(epoch=epoch, **meta))
            if not rejected:
                ckpt.save_optimizer(ckpt.optimizer_path(self.exp, epoch), optimizer)
        return os.path.relpath(path, self.exp)

    def _cv_key(self) -> str:
        """The history's name of the cv figure the schedule judges an epoch by."""
        return "cv_fer" if self.schedule.options.cv_criterion == "errors" else "cv_loss"

    def _cv_criterion(self, cv: EpochStats) -> float:
        """The cv figure the schedule judges an epoch by (``--cv-criterion``)."""
        return cv.fer if self._cv_key() == "cv_fer" else cv.loss

    # --- passes -----------------------------------------------------------------------
    def evaluate(self, model) -> EpochStats:
        it = make_batch_iterator(self.cv, self.cv_dcfg, 0, self.info.rank, self.info.world_size,
                                 pin_memory=self.dev.type == "cuda")
        s = run_epoch(model, it, self.info, amp=self.tcfg.amp, what="cv", total_batches=len(it),
                      progress_every=self.tcfg.progress_every, objective=self.objective)
        return s.reduce(self.info)

    def train_epoch(self, model, optimizer, epoch: int,
                    average: Optional[dict] = None, start_model: str = "") -> EpochStats:
        """One training pass; ``average``: the parameter averager's state saved with the model
        (``--parallel=average``), returned for the new model in ``extra["average"]``.
        ``start_model``: the model the epoch started from, which an in-epoch checkpoint names
        (``hybridasr.train.partial``): the epoch resumes from one of it."""
        it = make_batch_iterator(self.tr, self.dcfg, epoch, self.info.rank,
                                 self.info.world_size, pin_memory=self.dev.type == "cuda")
        plan = it.stats()
        resume = rng = checkpoints = None
        if not self.info.active:  # a checkpoint of an earlier run is used whatever the options
            resume, rng = self._resume(model, optimizer, epoch, start_model, plan)
            if resume is not None:
                it.skip_batches = resume.batches
        if self.in_epoch:
            checkpoints = partial.EpochCheckpoints(
                self.exp, model, optimizer, epoch, plan, len(it), start_model,
                self.tcfg.checkpoint_every, self.tcfg.checkpoint_every_batches)
        ddp = self.tcfg.parallel == "ddp" and self.info.active
        averager = None
        net = model
        if ddp:
            from torch.nn.parallel import DistributedDataParallel

            net = DistributedDataParallel(
                model, device_ids=[self.dev.index] if self.dev.type == "cuda" else None)
        elif self.tcfg.parallel == "average" and self.info.active:
            averager = ParameterAverager(model, self.info, self.tcfg.sync_every,
                                         self.tcfg.average_decay, previous=average)
        s = run_epoch(net, it, self.info, optimizer=optimizer,
                      clip_grad_norm=self.tcfg.clip_grad_norm, amp=self.tcfg.amp,
                      averager=averager, ddp=ddp, what=f"epoch {epoch}",
                      total_batches=len(it), progress_every=self.tcfg.progress_every,
                      resume=resume, rng_state=rng, checkpoints=checkpoints,
                      objective=self.objective)
        s = s.reduce(self.info)
        s.extra["padding_ratio"] = plan.get("padding_ratio")
        if averager is not None:
            s.extra["average"] = averager.state_dict()
        return s

    def _resume(self, model, optimizer, epoch: int, start_model: str, plan: dict):
        """(counts so far, random state) of the epoch's in-epoch checkpoint, whose model and
        optimizer state are loaded into ``model`` and ``optimizer``; (None, None) without one."""
        st = partial.resume(self.exp, model, optimizer, epoch, start_model, plan, self.dev)
        if st is None:
            return None, None
        return EpochStats(**st["stats"]), st["rng"]

    # --- the schedule -----------------------------------------------------------------
    def _start(self) -> dict:
        from hybridasr.models import build_model

        torch.manual_seed(self.dcfg.seed)  # --seed: initialisation, batch order, dropout
        model = build_model(self.mcfg, self.input_dim, self.num_pdfs).to(self.dev)
        if self.tcfg.init_model:
            self._init_from(model, self.tcfg.init_model)
        broadcast_parameters(model, self.info)
        optimizer = make_optimizer(model, self.tcfg, self.schedule.lr)
        t0 = time.perf_counter()
        cv = self.evaluate(model)
        best = self._save(model, optimizer, 0, False, cv_loss=cv.loss)
        self.schedule.start(self._cv_criterion(cv))
        log.info("initial cross-validation: loss %.4f, %s %.2f%%", cv.loss, self.errors_are,
                 100 * cv.fer)
        history = [{"epoch": 0, "lr": self.schedule.lr, "objective": self.tcfg.objective,
                    "cv_loss": cv.loss, "cv_fer": cv.fer,
                    "accepted": True, "reason": "initial model", "model": best,
                    "seconds": time.perf_counter() - t0}]
        return {"epoch": 0, "best": best, "best_epoch": 0, "done": False,
                "schedule": self.schedule.state_dict(), "history": history,
                "model_config": self.mcfg, "input_dim": self.input_dim,
                "num_pdfs": self.num_pdfs, "train_seconds": 0.0}

    def _check_resumable(self, state: dict) -> None:
        same = (state.get("model_config") == self.mcfg and
                state.get("input_dim") == self.input_dim and
                state.get("num_pdfs") == self.num_pdfs)
        if not same:
            raise ConfigError(
                f"{self.exp}/{ckpt.STATE_FILE} is from a training with another model or data "
                f"({state.get('model_config')}, input dim {state.get('input_dim')}, "
                f"{state.get('num_pdfs')} pdfs); use another exp dir, or --restart=true to "
                f"train over it")

    def _publish(self, state: dict) -> None:
        if self.info.is_main:
            ckpt.write_state(self.exp, state)
            partial.remove(self.exp, state["epoch"])  # the epoch's own checkpoint replaces them
            write_metrics(os.path.join(self.exp, "metrics.jsonl"), state["history"])
            plot_curves(os.path.join(self.exp, "curves.png"), state["history"])
        barrier(self.info)

    def run(self) -> dict:
        state = ckpt.read_state(self.exp)
        if state is None:
            state = self._start()
            self._publish(state)
        else:
            self._check_resumable(state)
            self.schedule.load_state_dict(state["schedule"])
            if self.info.is_main:
                for name in partial.remove(self.exp, state["epoch"]):
                    log.info("removed %s: its epoch was already finished", name)
            barrier(self.info)
            if not state["done"]:
                log.info("resuming after epoch %d (best: %s, learning rate %g)", state["epoch"],
                         state["best"], self.schedule.lr)
        while not state["done"]:
            state = self._one_epoch(state)
            self._publish(state)
        if self.tcfg.combine_models > 1 and "combined" not in state:
            state = self._combine(state)
            self._publish(state)
        if (self.tcfg.init_model and self.tcfg.keep_initial_model
                and not ckpt.improved_on_initial(state)):
            log.warning("no epoch improved on the initial model %s (cv loss %.4f): it is kept "
                        "as final.nnet (--keep-initial-model)", self.tcfg.init_model,
                        state["history"][0]["cv_loss"])
        else:
            ckpt.check_improved(self.exp, state, self.info.is_main)  # all rejected: an error
        if self.info.is_main:
            final = (state.get("combined") or {}).get("model") or state["best"]
            ckpt.link_final(self.exp, os.path.join(self.exp, final))
        barrier(self.info)
        return state

    def _combine(self, state: dict) -> dict:
        """Kaldi's final combination (``--combine-models``, ``hybridasr.train.combine``)."""
        from hybridasr.models import save_model
        from hybridasr.train import combine

        records = combine.last_models(state["history"], self.tcfg.combine_models)
        if len(records) < 2 or not ckpt.improved_on_initial(state):
            log.info("--combine-models=%d: %d kept epoch(s), nothing to average",
                     self.tcfg.combine_models, len(records))
            return dict(state, combined={"model": None, "models": len(records)})
        key = self._cv_key()
        model, n, report = combine.combine(
            records, self._load, lambda m: self._cv_criterion(self.evaluate(m)), key)
        rel = None
        if n > 1:
            rel = combine.COMBINED
            if self.info.is_main:
                save_model(os.path.join(self.exp, rel), model, self.mcfg,
                           self.meta(epoch=records[0]["epoch"],
                                     combined_epochs=report["chosen_epochs"],
                                     **{key: report[key]}))
        if self.info.is_main:
            combine.write_report(self.exp, report)
        log.info("final combination: the last %d model(s) (epochs %s), %s %.4f against %.4f "
                 "for the last alone", n, ",".join(map(str, report["chosen_epochs"])), key,
                 report[key], report["candidates"][0][key])
        return dict(state, combined={"model": rel, "models": n,
                                     "epochs": report["chosen_epochs"], key: report[key]})

    def _one_epoch(self, state: dict) -> dict:
        epoch = state["epoch"] + 1
        lr = self.schedule.lr
        model = self._load(state["best"])
        optimizer = make_optimizer(model, self.tcfg, lr)
        ckpt.load_optimizer(ckpt.optimizer_path(self.exp, state["best_epoch"]), optimizer,
                            self.dev)
        set_learning_rate(optimizer, lr)
        torch.manual_seed(self.dcfg.seed * 1000 + epoch)
        log.info("epoch %d: learning rate %g, from %s", epoch, lr, state["best"])
        dropout = None
        if self.tcfg.dropout_schedule:
            dropout = apply_dropout_schedule(model, self.tcfg.dropout_schedule, epoch,
                                             self.schedule.max_iters)
            log.info("epoch %d: dropout %g (--dropout-schedule=%s)", epoch, dropout,
                     self.tcfg.dropout_schedule)
        tr = self.train_epoch(model, optimizer, epoch, average=ckpt.load_average(
            ckpt.average_path(self.exp, state["best_epoch"]), self.dev),
            start_model=state["best"])
        rec = {"epoch": epoch, "lr": lr, "objective": self.tcfg.objective,
               "train_loss": tr.loss, "train_fer": tr.fer,
               "train_frames": tr.frames, "frames_per_s": tr.frames_per_second,
               "padding_ratio": tr.extra.get("padding_ratio"),
               "real_padding_ratio": tr.padded_frames / tr.frames if tr.frames else None,
               "batches": tr.batches, "seconds": tr.seconds, "world_size": self.info.world_size}
        if dropout is not None:
            rec["dropout"] = dropout
        if tr.diverged:
            decision = self.schedule.diverged(epoch)
            rec.update(cv_loss=float("nan"), cv_fer=float("nan"), accepted=False,
                       reason=decision.reason, model=None, diverged_at=tr.diverged_at)
            log.warning("epoch %d: the loss became NaN or inf%s: epoch rejected, learning "
                        "rate %g -> %g", epoch, f" in {tr.diverged_at}" if tr.diverged_at
                        else "", lr, decision.lr)
        else:
            cv = self.evaluate(model)
            decision = self.schedule.epoch_done(epoch, tr.loss, self._cv_criterion(cv))
            saved = self._save(model, optimizer, epoch, not decision.accept,
                               train_loss=tr.loss, cv_loss=cv.loss)
            if decision.accept and self.info.is_main:  # V(t-1) of the epochs that start here
                ckpt.save_average(ckpt.average_path(self.exp, epoch), tr.extra.get("average"))
            rec.update(cv_loss=cv.loss, cv_fer=cv.fer, accepted=bool(decision.accept),
                       reason=decision.reason, model=saved)
            log.info("epoch %d: train loss %.4f FER %.2f%%, cv loss %.4f FER %.2f%%, "
                     "%.0f frames/s, %s", epoch, tr.loss, 100 * tr.fer, cv.loss, 100 * cv.fer,
                     tr.frames_per_second, decision.reason)
            if decision.accept:
                state = dict(state, best=saved, best_epoch=epoch)
        rec["next_lr"] = decision.lr
        history = list(state["history"]) + [rec]
        return dict(state, epoch=epoch, done=bool(decision.stop),
                    schedule=self.schedule.state_dict(), history=history,
                    train_seconds=state.get("train_seconds", 0.0) + tr.seconds)


def save_config_json(path: str, **parts) -> None:
    from hybridasr.utils.atomic import atomic_open

    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(parts, f, indent=1, sort_keys=True, default=str)


def train(inputs: TrainInputs, dcfg: DataConfig, mcfg: dict, tcfg: TrainConfig,
          schedule, restart: bool = False) -> dict:
    """Trains into ``inputs.exp_dir``, resuming the run there; ``restart``: start over
    (``checkpoint.remove_run``)."""
    from hybridasr.utils.threads import apply as apply_threads

    threads = apply_threads(tcfg.num_threads)
    log.info("using %d CPU threads, %d inter-op (%s)", torch.get_num_threads(),
             torch.get_num_interop_threads(), threads.reason)
    torch.set_flush_denormal(True)  # denormal LSTM states slow CPUs down many times
    info = init_distributed(tcfg.device, tcfg.parallel)
    try:
        with stop_on_lost_peer(info):  # a dead rank: a clear error on the others
            trainer = Trainer(inputs, dcfg, mcfg, tcfg, schedule, info, restart=restart)
            state = trainer.run()
            # every rank done before any tears its process group down (the worker then
            # leaves without the interpreter's teardown: pybin/train.py main_as_process)
            barrier(info)
    finally:
        shutdown(info)
    return state
