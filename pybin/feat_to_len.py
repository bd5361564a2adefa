#!/usr/bin/env python3
"""Kaldi's feat-to-len: the number of frames of each feature matrix of a table."""
from hybridasr.cli import make_parser, run_main
from hybridasr.kaldi.io.matrix_lengths import feat_length_of_file, feat_lengths
from hybridasr.kaldi.io.specifier import parse_wspecifier
from hybridasr.kaldi.io.table_writer import TextTableWriter


def get_parser():
    p = make_parser("feat_to_len.py",
                    "Writes 'utt num-frames' for each matrix of a feature table (only the matrix "
                    "headers are read for scp entries pointing into binary arks). With a single "
                    "file argument, prints the number of rows of the matrix it holds.",
                    usage="feat_to_len.py [options] <feats-rspecifier> <lengths-wspecifier>\n"
                          "       feat_to_len.py [options] <feats-rxfilename>",
                    example="feat_to_len.py scp:data/train/feats.scp "
                            "ark,t:data/train/utt2num_frames")
    p.add_argument("feats", help="scp:<feats.scp>, ark:<feats.ark>, or one matrix file")
    p.add_argument("lengths_wspecifier", nargs="?", default=None,
                   help="where to write: ark,t:<file> or ark,t:- (stdout)")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    if args.lengths_wspecifier is None:
        print(feat_length_of_file(args.feats))
        return 0
    out = parse_wspecifier(args.lengths_wspecifier, plain_ok=True)
    lengths = feat_lengths(args.feats)
    with TextTableWriter(out) as w:
        for utt, n in lengths.items():
            w.write(utt, n)
    return 0


if __name__ == "__main__":
    run_main(main)
