#!/usr/bin/env python3
"""Transcribes recordings with a trained model dir and a graph dir: prints ``<id> <words>`` per
recording (Kaldi's ``text``), and with ``--ctm`` writes word times and confidences. No data
dir, feature archive or Kaldi binary (hybridasr.decode.transcribe). In place of the model dir,
the file export_model.py wrote: then torch runs the model (no model code is imported)."""

from hybridasr.cli import add_bool, add_options, make_parser, run_main
from hybridasr.decode.transcribe import TranscribeOptions
from hybridasr.device import DeviceOptions


def get_parser():
    p = make_parser(
        "transcribe.py",
        "Transcribes audio (file paths, - for wav bytes on stdin, or --wav-scp) with the model "
        "dir that steps/nnet/train.sh wrote (final.nnet, final.mdl, ali_train_pdf.counts, "
        "conf/<mfcc|fbank>.conf, global_cmvn.stats) and a graph dir (HCLG.fst, words.txt, "
        "phones/word_boundary.int for --ctm), or, in place of the model dir, the TorchScript "
        "file export_model.py wrote from one. The id of a file is its name without the "
        "extension; of stdin, 'stdin'; of a wav.scp line, its key.",
        usage="transcribe.py [options] <model-dir|exported.pt> <graph-dir> [<audio>|- ...]",
        example="transcribe.py --ctm=out.ctm exp/blstm exp/mono/graph rec1.wav rec2.wav")
    p.add_argument("--wav-scp", default="", help="a Kaldi wav.scp (paths or 'cmd |' entries)")
    p.add_argument("--feat-config", default="",
                   help="the feature conf of the training features (default: "
                        "<model-dir>/conf/mfcc.conf or conf/fbank.conf)")
    p.add_argument("--feat-type", default="", choices=("", "mfcc", "fbank"),
                   help="mfcc|fbank (default: from the conf file's name)")
    p.add_argument("--ctm", default="",
                   help="write a CTM (<id> 1 <start> <dur> <word> <conf>) to this file")
    p.add_argument("--confidence-calibration", default="",
                   help="a calibration of the CTM's confidences (the JSON file "
                        "train_confidence_calibration.py wrote); default: the lattice "
                        "posteriors as they are")
    p.add_argument("--utt2spk", default="",
                   help="a Kaldi utt2spk of the recordings' ids: the recordings of a speaker "
                        "share CMVN stats (per-speaker apply-cmvn, as decode.sh) and, for a "
                        "network of a SAT GMM's fMLLR features, an fMLLR transform estimated "
                        "from all of them (decode_fmllr.sh); default: each recording its own "
                        "speaker. Not with --online")
    p.add_argument("--gmm-dir", default="",
                   help="add the log-likelihoods of this Kaldi GMM of the network's tree "
                        "(final.mdl, tree; its own features from the model's: cmvn_opts, "
                        "then splice_opts + final.mat or deltas), as decode.sh --gmm-dir and "
                        "the recipe's decoding of a small dir; not with --online, an exported "
                        "or a chain model, or a speaker-adapted GMM")
    p.add_argument("--gmm-weight", type=float, default=0.5,
                   help="with --gmm-dir: the GMM's weight, the network's 1 - it")
    add_bool(p, "--online", False,
             "stream each recording: given in pieces of --piece-seconds as a "
             "real-time client would, online features and CMVN, the network in --chunking "
             "windows, the decoder advanced after each piece (hybridasr.decode.online); the "
             "same words as without --online at the same --chunking). One thread, as a "
             "real-time client's core")
    p.add_argument("--piece-seconds", type=float, default=0.1,
                   help="with --online: seconds of audio a piece")
    add_bool(p, "--print-partial", False,
             "with --online: print '<id> (partial) <words>' to stderr whenever a piece "
             "changes the best path's words")
    add_options(p, TranscribeOptions, "search and output")
    add_options(p, DeviceOptions, "device")
    p.add_argument("model_dir")
    p.add_argument("graph_dir")
    p.add_argument("audio", nargs="*")
    return p


def main(argv=None):
    import sys

    import os

    import torch

    from hybridasr.decode.transcribe import Transcriber, recordings, transcribe_all
    from hybridasr.device import resolve_device
    from hybridasr.errors import ConfigError, HybridAsrError
    from hybridasr.kaldi.io.streams import OutputStream
    from hybridasr.options import from_values

    args = get_parser().parse_args(argv)
    opts = from_values(TranscribeOptions, args)
    online = args.online
    if online:
        import dataclasses
        import logging

        from hybridasr.decode.online import online_chunking

        if os.path.isfile(args.model_dir):
            raise ConfigError("--online runs the network of a model dir in chunks: give the "
                              "model dir, not an exported model")
        if not args.piece_seconds > 0:
            raise ConfigError(f"--piece-seconds={args.piece_seconds}: must be > 0")
        chunking, source = online_chunking(opts.chunking, args.model_dir)
        if not opts.chunking:
            logging.getLogger("transcribe.py").warning("note: --online: --chunking=%s, %s",
                                                       chunking, source)
        opts = dataclasses.replace(opts, chunking=chunking)
    calibration = None
    if args.confidence_calibration:
        from hybridasr.decode.confidence_calibration import ConfidenceCalibration

        if not args.ctm:
            raise ConfigError("--confidence-calibration calibrates the CTM's confidences: "
                              "give --ctm too")
        calibration = ConfidenceCalibration.load(args.confidence_calibration)
    recs = recordings(args.audio, args.wav_scp)
    device = resolve_device(args.device)
    if os.path.isfile(args.model_dir):  # an exported model: torch runs it
        import logging

        from hybridasr.decode.export import exported_model_dir

        with exported_model_dir(args.model_dir, args.feat_config, args.feat_type, opts.cmvn,
                                device) as (md, model, meta):
            if meta.get("prior_scale") not in (None, opts.prior_scale):
                logging.getLogger("transcribe.py").warning(
                    "note: %s was exported with --prior-scale=%g: --prior-scale=%g has no "
                    "effect (export again to change it)", args.model_dir, meta["prior_scale"],
                    opts.prior_scale)
            t = Transcriber(md, model, meta, args.graph_dir, opts, want_ctm=bool(args.ctm),
                            device=device)
    else:
        from hybridasr.decode.model_dir import load_model_dir
        from hybridasr.features.transform import FeatureTransform
        from hybridasr.models import load_model

        model, meta = load_model(os.path.join(args.model_dir, "final.nnet"), device)
        transform = FeatureTransform.from_dict(meta["transform"])
        md = load_model_dir(args.model_dir, args.feat_config, args.feat_type, opts.cmvn,
                            transform.norm_means)
        t = Transcriber(md, model, meta, args.graph_dir, opts, want_ctm=bool(args.ctm),
                        device=device)
    t.calibration = calibration
    if online and t.sat is not None:
        t.close()
        raise ConfigError(f"--online: {args.model_dir} reads a SAT GMM's features (splice + "
                          f"final.mat of {t.md.fmllr_gmm}): transcribe whole recordings")
    if args.utt2spk:
        from hybridasr.kaldi.io.table import read_map

        if online:
            t.close()
            raise ConfigError("--utt2spk: not with --online (a speaker's stats come from all "
                              "of its recordings first)")
        try:
            t.use_speakers(recs, read_map(args.utt2spk))
        except BaseException:
            t.close()
            raise
    if args.gmm_dir:
        if online:
            t.close()
            raise ConfigError("--gmm-dir: not with --online (the GMM's deltas or splicing "
                              "look ahead of each piece): transcribe whole recordings")
        try:
            t.use_gmm(args.gmm_dir, args.gmm_weight)
        except BaseException:
            t.close()
            raise
    run = None
    if online:
        from hybridasr.decode.online import OnlineRecognizer

        try:
            recognizer = OnlineRecognizer(t)
        except BaseException:
            t.close()
            raise

        def partial(key, words):
            sys.stderr.write(f"{key} (partial) {' '.join(words)}".rstrip() + "\n")
            sys.stderr.flush()

        show = partial if args.print_partial else None

        def run(rec):
            return recognizer.transcribe(rec, args.piece_seconds, show)
    threads = torch.get_num_threads()
    if online:  # small windows: a second thread only spins
        torch.set_num_threads(1)
    ctm = OutputStream(args.ctm) if args.ctm else None

    def text(line):
        sys.stdout.write(line)
        sys.stdout.flush()

    try:
        failed = transcribe_all(t, recs, text,
                                (lambda s: ctm.write(s.encode("utf-8"))) if ctm else None, run)
    except BaseException:
        if ctm is not None:
            ctm.abort()
        raise
    finally:
        t.close()
        torch.set_num_threads(threads)
    if ctm is not None:
        ctm.commit()
    if failed:
        raise HybridAsrError(f"{failed} of {len(recs)} recordings could not be transcribed "
                             f"(see the errors above)")
    return 0


if __name__ == "__main__":
    run_main(main)
