"""The command line of ``compute_mfcc_feats.py`` / ``compute_fbank_feats.py`` (Kaldi's
``compute-{mfcc,fbank}-feats`` options, plus what ``extract-segments`` and ``copy-feats`` add in
Kaldi's ``make_mfcc.sh`` pipeline: ``--segments``, ``--compress``, ``--write-num-frames``)."""
from __future__ import annotations

from hybridasr.cli import add_bool, make_parser
from hybridasr.errors import ConfigError
from hybridasr.features.make_feats import compute_feature_table, read_vtln_map
from hybridasr.features.specifiers import rspecifier_path
from hybridasr.features.options import FeatureOptions, add_feature_options


def make_feature_parser(kind: str):
    prog = f"compute_{kind}_feats.py"
    p = make_parser(
        prog, f"Computes Kaldi-compatible {kind.upper()} features (same options, defaults and "
              f"numbers as Kaldi's compute-{kind}-feats) into an ark/scp.",
        usage=f"{prog} [options] <wav-rspecifier> <feats-wspecifier>",
        example=f"{prog} --config=conf/{kind}.conf --compress=true scp:data/train/wav.scp "
                f"ark,scp:{kind}/raw_{kind}_train.1.ark,{kind}/raw_{kind}_train.1.scp")
    add_feature_options(p, kind)
    p.add_argument("--channel", type=int, default=-1,
                   help="channel to extract (-1: expect mono, 0: left, 1: right) (default: -1)")
    p.add_argument("--min-duration", type=float, default=0.0,
                   help="skip utterances shorter than this, in seconds (default: 0)")
    add_bool(p, "--subtract-mean", False, "subtract the mean of each utterance (CMS)")
    p.add_argument("--output-format", default="kaldi", help="kaldi (htk is not supported)")
    p.add_argument("--vtln-warp", type=float, default=1.0,
                   help="VTLN warp factor (when there is no --vtln-map) (default: 1.0)")
    p.add_argument("--vtln-map", default="",
                   help="text table utterance (or, with --utt2spk, speaker) -> warp factor, "
                        "e.g. ark:data/train/spk2warp")
    p.add_argument("--utt2spk", default="", help="utt2spk table for --vtln-map, "
                                                 "e.g. ark:data/train/utt2spk")
    p.add_argument("--write-utt2dur", default="",
                   help="write utterance durations, e.g. ark,t:exp/log/utt2dur.1")
    p.add_argument("--write-num-frames", default="",
                   help="write frame counts, e.g. ark,t:exp/log/utt2num_frames.1")
    p.add_argument("--segments", default="",
                   help="Kaldi segments file: cut utterances out of the wav.scp recordings")
    p.add_argument("--min-segment-length", type=float, default=0.1,
                   help="skip segments shorter than this, in seconds (default: 0.1)")
    p.add_argument("--max-overshoot", type=float, default=0.5,
                   help="segments ending less than this past the recording are truncated, "
                        "others skipped (seconds) (default: 0.5)")
    add_bool(p, "--compress", False, "write Kaldi compressed matrices (copy-feats --compress)")
    p.add_argument("--compression-method", type=int, default=1, choices=range(1, 8),
                   help="with --compress: Kaldi's CompressionMethod, 1 = automatic as "
                        "copy-feats (8-bit CM above 8 frames, else 16-bit CM2), 2 = always "
                        "CM (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the dither noise (default: 0)")
    p.add_argument("--max-skipped-fraction", type=float, default=0.05,
                   help="fail (writing nothing) when more than this fraction of the utterances "
                        "had to be skipped (default: 0.05)")
    p.add_argument("--batch-frames", type=int, default=4000,
                   help="frames computed together in one batch (default: 4000)")
    p.add_argument("--num-threads", type=int, default=1,
                   help="torch threads (1 per job; parallel jobs give the speed) (default: 1)")
    p.add_argument("wav_rspecifier")
    p.add_argument("feats_wspecifier")
    return p


def run_feature_program(kind: str, argv=None) -> int:
    args = make_feature_parser(kind).parse_args(argv)
    if args.output_format != "kaldi":
        raise ConfigError(f"--output-format={args.output_format} is not supported "
                          f"(only kaldi)")
    if args.utt2spk and not args.vtln_map:
        raise ConfigError("--utt2spk is only needed with --vtln-map")
    opts = FeatureOptions.from_args(kind, args)
    warps = read_vtln_map(args.vtln_map, args.utt2spk or None) if args.vtln_map else None
    compute_feature_table(
        rspecifier_path(args.wav_rspecifier), args.feats_wspecifier, opts,
        segments=args.segments or None, seed=args.seed, compress=args.compress,
        compression_method=args.compression_method,
        channel=args.channel, min_duration=args.min_duration, subtract_mean=args.subtract_mean,
        vtln_warp=args.vtln_warp, vtln_warps=warps,
        utt2num_frames=args.write_num_frames or None, utt2dur=args.write_utt2dur or None,
        max_skipped_fraction=args.max_skipped_fraction, batch_frames=args.batch_frames,
        min_segment_length=args.min_segment_length, max_overshoot=args.max_overshoot,
        num_threads=args.num_threads)
    return 0
