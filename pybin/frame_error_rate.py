#!/usr/bin/env python3
"""Frame error rate of a trained model against alignment targets (no decoding graph needed)."""


from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.decode.forward import ForwardOptions


def get_parser():
    p = make_parser(
        "frame_error_rate.py",
        "Forward a data dir through a model and count the frames whose best output differs\n"
        "from the target pdf-id (targets.scp from steps/import_ali.sh). Prints\n"
        "'%FER <rate> [ <errors> / <frames> frames, <n> utterances ]'.",
        usage="frame_error_rate.py [options] <model-in> <data-dir> <targets-scp>",
        example="frame_error_rate.py exp/blstm/final.nnet data/test exp/ali_test/targets.scp")
    add_options(p, ForwardOptions)
    p.add_argument("model_in")
    p.add_argument("data_dir")
    p.add_argument("targets_scp", help="scp of int32 pdf-id vectors (scp: prefix optional)")
    return p


def main(argv=None):
    from hybridasr.decode.forward import chunk_options, device_for, load_model_and_data
    from hybridasr.decode.frame_error import frame_errors
    from hybridasr.errors import FormatError

    args = get_parser().parse_args(argv)
    targets = args.targets_scp[4:] if args.targets_scp.startswith("scp:") else args.targets_scp
    chunks = chunk_options(args)
    device = device_for(args.device)
    model, _, dataset = load_model_and_data(args.model_in, args.data_dir, device, targets)
    if not len(dataset):
        raise FormatError(f"no utterance of {args.data_dir} has targets in {targets}")
    print(frame_errors(model, dataset, device, chunks).format(), flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
