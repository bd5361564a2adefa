"""Kaldi formats and conventions (no torch here)."""
