"""Training: the epoch loop, checkpoints and resumption, learning-rate control (newbob and
friends), torch.distributed (DDP gradient all-reduce or periodic parameter averaging), metrics
and curves. ``hybridasr.train.trainer.train`` is what ``pybin/train.py`` runs."""
