"""Kaldi nnet1 networks in text form: what ``nnet-forward`` reads as its network and as its
``--feature-transform`` (``nnet-copy --binary=false`` writes the same).

The layout is that of Kaldi's writers (``Nnet::Write``, ``Component::Write`` and each
component's ``WriteData`` in ``src/nnet/``): the component's marker, its *output* dim, its
input dim, its data, ``<!EndOfComponent>``::

    <Nnet>
    <Splice> 143 13
    [ -5 -4 -3 -2 -1 0 1 2 3 4 5 ]
    <!EndOfComponent>
    <AffineTransform> 256 143
    <LearnRateCoef> 1 <BiasLearnRateCoef> 1 <MaxNorm> 0
     [
      w w ... (one line per output row)
      w w ... ]
     [ b b ... ]
    <!EndOfComponent>
    <Sigmoid> 256 256
    <!EndOfComponent>
    </Nnet>

Components written here (``nnet-component.cc``'s markers): ``<AffineTransform>``,
``<Sigmoid>``, ``<Tanh>``, ``<ParametricRelu>`` (per-unit slopes: alpha for inputs >= 0,
beta below; Kaldi since June 2016), ``<Softmax>``, ``<Splice>`` (frame offsets, edges
replicated), ``<AddShift>`` and ``<Rescale>`` (per-dimension shift and scale). Floats are
written with 9 significant digits, which a C++ ``>>`` reads back to the same float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from hybridasr.errors import FormatError
from hybridasr.utils.atomic import atomic_open


@dataclass(frozen=True)
class Component:
    """One nnet1 component: its marker, dims, and the text of its data (``WriteData``)."""

    marker: str        # e.g. "<AffineTransform>"
    output_dim: int
    input_dim: int
    data: str = ""     # everything between the dims line and <!EndOfComponent>

    def text(self) -> str:
        return f"{self.marker} {self.output_dim} {self.input_dim} \n{self.data}<!EndOfComponent> \n"


def _float(x: float) -> str:
    """A scalar as Kaldi's ``WriteBasicType<float>`` would read it back (exact)."""
    v = float(np.float32(x))
    return str(int(v)) if v.is_integer() and abs(v) < 2 ** 24 else "%.9g" % v


def _finite(values: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise FormatError(f"{what} has NaN or infinite values: nnet-forward would refuse it")
    return a


def _row(values: np.ndarray) -> str:
    """Values separated by single spaces, each followed by one (Kaldi's text layout)."""
    return ("%.9g " * len(values)) % tuple(values.tolist())


def _vector(values, what: str) -> str:
    """A Kaldi text vector (``Vector::Write``): `` [ v v ... ]`` and a newline."""
    a = _finite(values, what)
    if a.ndim != 1:
        raise ValueError(f"{what}: expected a vector, got shape {a.shape}")
    return f" [ {_row(a)}]\n"


def _matrix(values, what: str) -> str:
    """A Kaldi text matrix (``Matrix::Write``): one line per row, inside `` [`` ... ``]``."""
    a = _finite(values, what)
    if a.ndim != 2:
        raise ValueError(f"{what}: expected a matrix, got shape {a.shape}")
    if a.shape[1] == 0:
        return " [ ]\n"
    return " [" + "".join(f"\n  {_row(r)}" for r in a) + "]\n"


# --- components -------------------------------------------------------------------------
def affine_transform(weight, bias, learn_rate_coef: float = 1.0,
                     bias_learn_rate_coef: float = 1.0, max_norm: float = 0.0) -> Component:
    """``y = x W^T + b``; ``weight`` is [out, in] (as ``torch.nn.Linear.weight``)."""
    w = np.asarray(weight)
    b = np.asarray(bias)
    if w.ndim != 2 or b.shape != (w.shape[0],):
        raise ValueError(f"<AffineTransform>: weight {w.shape} and bias {b.shape} do not fit")
    data = (f"<LearnRateCoef> {_float(learn_rate_coef)} <BiasLearnRateCoef> "
            f"{_float(bias_learn_rate_coef)} <MaxNorm> {_float(max_norm)} \n"
            + _matrix(w, "<AffineTransform> weights") + _vector(b, "<AffineTransform> bias"))
    return Component("<AffineTransform>", w.shape[0], w.shape[1], data)


def sigmoid(dim: int) -> Component:
    return Component("<Sigmoid>", int(dim), int(dim))


def tanh(dim: int) -> Component:
    return Component("<Tanh>", int(dim), int(dim))


def softmax(dim: int) -> Component:
    return Component("<Softmax>", int(dim), int(dim))


def parametric_relu(alpha, beta, alpha_learn_rate_coef: float = 0.0,
                    beta_learn_rate_coef: float = 0.0) -> Component:
    """``y = alpha * x`` where ``x >= 0``, ``beta * x`` elsewhere (per unit): alpha 1 and
    beta 0 is a ReLU."""
    a, b = np.asarray(alpha), np.asarray(beta)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"<ParametricRelu>: alpha {a.shape} and beta {b.shape} do not fit")
    data = (f"<AlphaLearnRateCoef> {_float(alpha_learn_rate_coef)} <BetaLearnRateCoef> "
            f"{_float(beta_learn_rate_coef)} \n" + _vector(a, "<ParametricRelu> alpha")
            + _vector(b, "<ParametricRelu> beta"))
    return Component("<ParametricRelu>", len(a), len(a), data)


def splice(input_dim: int, offsets: Sequence[int]) -> Component:
    """Row t of the output is input rows ``t + o`` for each offset (clamped to the utterance),
    concatenated in the offsets' order."""
    offs = [int(o) for o in offsets]
    if not offs:
        raise ValueError("<Splice> needs at least one frame offset")
    data = "[ " + "".join(f"{o} " for o in offs) + "]\n"  # WriteIntegerVector
    return Component("<Splice>", int(input_dim) * len(offs), int(input_dim), data)


def add_shift(shift, learn_rate_coef: float = 0.0) -> Component:
    """``y = x + shift`` per dimension (a learning-rate coefficient 0 keeps it fixed, as
    ``cmvn-to-nnet`` writes it)."""
    s = np.asarray(shift)
    return Component("<AddShift>", len(s), len(s),
                     f"<LearnRateCoef> {_float(learn_rate_coef)} "
                     + _vector(s, "<AddShift> shift"))


def rescale(scale, learn_rate_coef: float = 0.0) -> Component:
    """``y = x * scale`` per dimension."""
    s = np.asarray(scale)
    return Component("<Rescale>", len(s), len(s),
                     f"<LearnRateCoef> {_float(learn_rate_coef)} "
                     + _vector(s, "<Rescale> scale"))


# --- networks ---------------------------------------------------------------------------
def format_nnet(components: List[Component]) -> str:
    """The text of an nnet1 network (``<Nnet>`` ... ``</Nnet>``); each component's input dim
    must be the previous one's output dim (nnet-forward checks it too)."""
    for prev, cur in zip(components, components[1:]):
        if prev.output_dim != cur.input_dim:
            raise ValueError(f"{cur.marker} has input dim {cur.input_dim} but the {prev.marker} "
                             f"before it outputs {prev.output_dim}")
    return "<Nnet> \n" + "".join(c.text() for c in components) + "</Nnet> \n"


def write_nnet(path: str, components: List[Component]) -> None:
    """Writes ``components`` as an nnet1 text file, atomically."""
    text = format_nnet(components)
    with atomic_open(path, "w", encoding="ascii") as f:
        f.write(text)
