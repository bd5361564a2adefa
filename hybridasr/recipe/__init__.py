"""Recipe-level helpers: checking and importing an existing Kaldi s5 directory, summaries."""
