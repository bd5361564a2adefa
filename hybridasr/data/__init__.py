"""The data pipeline: Kaldi features and targets -> transformed, batched tensors.

- ``dataset.UtteranceDataset``: features (kaldiio random access), targets, CMVN, lengths,
  through the model's feature transform (``hybridasr.features.transform``).
- ``batching``: the strategies, one interface, a registry, chosen by
  ``--seq-ordering=NAME[:ARG]``; each strategy is one module that declares its options and
  capabilities; ``batching.sharding``: equal disjoint shares per rank.
- ``chunking``: ``--chunking=size:step``, a modifier of the strategies that batch whole
  utterances (and the same windows for decoding).
- ``epoch``: one epoch's plan (lengths -> items -> the config's strategy -> this rank's share).
- ``loader.make_batch_iterator``: background workers turning plans into ``batch.Batch``.
- ``config.DataConfig``: the settings, typed (the transform's options, the common ones, the
  chosen strategy's) and the strategy built once from them; ``options``: their declarations
  for the command line (``data_option_sets``) and ``data_config_from_args``.
"""
