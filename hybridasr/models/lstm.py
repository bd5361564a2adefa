"""Unidirectional stacked LSTM acoustic model with a carried recurrent state (truncated BPTT).

The state is ``(h, c)`` as ``nn.LSTM`` has it: ``h`` [layers, B, proj_size or hidden_size],
``c`` [layers, B, hidden_size]. With ``return_state=True`` the returned state of each row is
the one after its *last real frame* (``lengths[b]``), not after the padding, so windows run
one after the other with the carried state give the same outputs as the whole sequence; a
row of length 0 keeps the state it came with. Label delay is the data pipeline's business.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import nn

from hybridasr.models.blstm import lengths_or_full
from hybridasr.models.options import LstmOptions

State = Tuple[torch.Tensor, torch.Tensor]


def reset_state(state: Optional[State], reset_mask: Optional[torch.Tensor]) -> Optional[State]:
    """The state with the rows of ``reset_mask`` (bool [B]) zeroed (a new utterance starts
    there); detached from the graph of the previous window. None stays None."""
    if state is None:
        return None
    h, c = (s.detach() for s in state)
    if reset_mask is not None and bool(reset_mask.any()):
        keep = (~reset_mask.to(torch.bool)).to(h.device, h.dtype).view(1, -1, 1)
        h, c = h * keep, c * keep
    return h, c


class Lstm(nn.Module):
    Options = LstmOptions  # its options (--num-layers, ...)
    recurrent = True  # uses the context of the sequence
    carries_state = True  # its state goes from one window to the next (truncated BPTT)

    def __init__(self, input_dim: int, num_outputs: int, num_layers: int, hidden_size: int,
                 proj_size: int, dropout: float):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_size, num_layers=num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0, proj_size=proj_size)
        self.output = nn.Linear(proj_size or hidden_size, num_outputs)

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None,
                state: Optional[State] = None, return_state: bool = False):
        if not return_state:
            out, _ = self.lstm(x, state)
            return self.output(out)
        out, new_state = self._run_to_lengths(x, lengths_or_full(x, lengths), state)
        return self.output(out), new_state

    def _run_to_lengths(self, x, lengths, state):
        """Runs the LSTM in segments ending at each distinct row length, keeping each row's
        state at its own end (one ``nn.LSTM`` call when every row is full)."""
        B, T = x.shape[0], x.shape[1]
        if state is None:
            L, H = self.lstm.num_layers, self.lstm.hidden_size
            P = self.lstm.proj_size or H
            state = (x.new_zeros(L, B, P), x.new_zeros(L, B, H))
        ends = sorted({int(n) for n in lengths.tolist() if 0 < n < T} | {T})
        final_h, final_c = state
        outs, start, cur = [], 0, state
        for end in ends:
            out, cur = self.lstm(x[:, start:end], cur)
            outs.append(out)
            done = (lengths == end).to(x.device).view(1, -1, 1)
            if bool(done.any()):
                final_h = torch.where(done, cur[0], final_h)
                final_c = torch.where(done, cur[1], final_c)
            start = end
        out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)
        return out, (final_h, final_c)
