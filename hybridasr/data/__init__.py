"""The data pipeline: Kaldi features and targets -> transformed, batched tensors.

- ``dataset.UtteranceDataset``: features (kaldiio random access), targets, CMVN, lengths.
- ``transform.FeatureTransform``: CMVN, deltas, global normalisation, splicing, stacking,
  subsampling, label delay; saved with the model, rebuilt at decode time.
- ``batching``: the strategies, one interface, a registry; each strategy is one module that
  declares its options and capabilities; ``batching.sharding``: equal disjoint shares per rank.
- ``epoch``: one epoch's plan (lengths -> items -> the strategy -> this rank's share).
- ``loader.make_batch_iterator``: background workers turning plans into ``batch.Batch``.
- ``config.DataConfig``: the settings; ``options``: their declarations for the command line
  (``data_option_sets``) and ``data_config_from_args``.
"""
