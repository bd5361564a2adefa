"""Saving and loading models: one ``torch.save`` of plain types plus the state dict.

``{"format": "hybridasr-nnet-1", "model_config": {...}, "input_dim": D, "num_outputs": P,
"meta": {...}, "state_dict": {...}}``, written atomically; loaded with ``weights_only=True``
(no pickled code runs) and rebuilt with ``build_model``. An ensemble (``save_ensemble``) is the
same format with its members' ``model_config``, dims and ``state_dict`` under ``"ensemble"``
(the top-level ones are its first member's); it loads as ``hybridasr.models.ensemble.Ensemble``.
"""
from __future__ import annotations

import json
import os
from typing import List, Tuple

import torch

from hybridasr.errors import FormatError
from hybridasr.models.factory import build_model, normalize_config
from hybridasr.utils.atomic import atomic_path

FORMAT = "hybridasr-nnet-1"


def save_model(path: str, model: torch.nn.Module, config: dict, meta: dict) -> None:
    """Writes ``model`` (its config, dims and ``meta``) to ``path`` atomically."""
    model = getattr(model, "module", model)  # DistributedDataParallel
    outputs = getattr(model, "num_outputs", None) or model.output.out_features  # tdnnf: its own
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    obj = {"format": FORMAT, "model_config": _plain(config, "model config"),
           "input_dim": _input_dim(model), "num_outputs": int(outputs),
           "meta": _plain(meta, "meta"), "state_dict": state}
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def _plain(obj: dict, what: str) -> dict:
    """``obj`` as JSON types (numpy scalars and arrays become numbers and lists), so that
    ``weights_only`` loading accepts it."""
    def default(o):
        if hasattr(o, "tolist"):
            return o.tolist()
        raise TypeError(f"{what}: {type(o).__name__} is not a plain JSON type")
    return json.loads(json.dumps(dict(obj), default=default))


def _input_dim(model: torch.nn.Module) -> int:
    if hasattr(model, "input_dim"):  # tdnnf
        return int(model.input_dim)
    if hasattr(model, "layers"):  # blstm
        return int(model.layers[0].fw.input_size)
    if hasattr(model, "lstm"):
        return int(model.lstm.input_size)
    first = next((m for m in model.hidden if isinstance(m, torch.nn.Linear)), model.output)
    return int(first.in_features)


def save_ensemble(path: str, member_paths: List[str]) -> dict:
    """One model file of the networks in ``member_paths`` whose log-posteriors are averaged
    (``Ensemble``), written atomically; returns its meta. The members must read the same
    features (the same feature transform and input dim) and give the same outputs; an error
    names the first that does not."""
    if len(member_paths) < 2:
        raise FormatError(f"an ensemble needs at least 2 networks, got {len(member_paths)}")
    objs = [_read(p) for p in member_paths]
    first = objs[0]
    for p, o in zip(member_paths[1:], objs[1:]):
        if "ensemble" in o:
            raise FormatError(f"{p}: is an ensemble already; give its members")
        for key, what in (("input_dim", "input dim"), ("num_outputs", "number of outputs")):
            if int(o[key]) != int(first[key]):
                raise FormatError(f"{p}: {what} {o[key]}, but {member_paths[0]} has "
                                  f"{first[key]}: not members of one ensemble")
        for key in ("transform", "num_pdfs", "frame_subsampling_factor"):
            a, b = (first.get("meta") or {}).get(key), (o.get("meta") or {}).get(key)
            if a != b:
                raise FormatError(f"{p}: its {key} differs from {member_paths[0]}'s: not "
                                  f"members of one ensemble (they must read the same features "
                                  f"and give the same outputs)")
    if "ensemble" in first:
        raise FormatError(f"{member_paths[0]}: is an ensemble already; give its members")
    meta = dict(first.get("meta") or {})
    meta["ensemble_members"] = [os.path.realpath(p) for p in member_paths]
    obj = {"format": FORMAT, "model_config": first["model_config"],
           "input_dim": int(first["input_dim"]), "num_outputs": int(first["num_outputs"]),
           "meta": _plain(meta, "meta"), "state_dict": {},
           "ensemble": [{k: o[k] for k in ("model_config", "input_dim", "num_outputs",
                                           "state_dict")} for o in objs]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)
    return meta


def _read(path: str) -> dict:
    """The checked contents of a model file."""
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise FormatError(f"{path}: no such model file") from None
    except IsADirectoryError:
        raise FormatError(f"{path}: is a directory, not a model file") from None
    except Exception as e:  # not a torch file, or pickled code weights_only refuses
        raise FormatError(f"{path}: not a hybridasr model ({FORMAT}): "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        got = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise FormatError(f"{path}: not a hybridasr model (format {got!r}, expected "
                          f"{FORMAT!r})")
    missing = [k for k in ("model_config", "input_dim", "num_outputs", "state_dict")
               if k not in obj]
    if missing:
        raise FormatError(f"{path}: {FORMAT} file lacks {', '.join(missing)}")
    return obj


def _build(path: str, obj: dict) -> torch.nn.Module:
    try:
        config = normalize_config(obj["model_config"])
        model = build_model(config, int(obj["input_dim"]), int(obj["num_outputs"]))
        model.load_state_dict(obj["state_dict"])
    except Exception as e:  # a bad config or a state dict of another shape
        raise FormatError(f"{path}: cannot rebuild the model: {e}") from None
    return model


def load_model(path: str, device="cpu") -> Tuple[torch.nn.Module, dict]:
    """(model in eval mode on ``device``, meta): the stored meta plus ``model_config``,
    ``input_dim``, ``num_outputs`` and ``num_pdfs`` (``num_outputs`` unless meta has it).
    An ensemble file gives an ``Ensemble`` of its members."""
    obj = _read(path)
    if "ensemble" in obj:
        from hybridasr.models.ensemble import Ensemble
        model = Ensemble([_build(f"{path} (member {i + 1})", m)
                          for i, m in enumerate(obj["ensemble"])])
    else:
        model = _build(path, obj)
    model.to(device).eval()
    meta = dict(obj.get("meta") or {})
    meta["model_config"] = obj["model_config"]
    meta["input_dim"] = int(obj["input_dim"])
    meta["num_outputs"] = int(obj["num_outputs"])
    meta.setdefault("num_pdfs", int(obj["num_outputs"]))
    return model, meta
