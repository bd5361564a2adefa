"""The data pipeline: Kaldi features and targets -> transformed, batched tensors.

- ``dataset.UtteranceDataset``: features (kaldiio random access), targets, CMVN, lengths.
- ``transform.FeatureTransform``: CMVN, deltas, global normalisation, splicing, stacking,
  subsampling, label delay; saved with the model, rebuilt at decode time.
- ``batching``: the strategies (``--seq-ordering``, ``--tbptt``), one interface, a registry.
- ``epoch``: one epoch's plan; ``sharding``: equal disjoint shares per rank.
- ``loader.make_batch_iterator``: background workers turning plans into ``batch.Batch``.
- ``options``: ``add_data_options``, ``data_config_from_args`` -> ``config.DataConfig``.
"""
