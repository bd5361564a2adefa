#!/usr/bin/env python3
"""Kaldi's ali-to-pdf: converts transition-id alignments to pdf-id sequences."""


from hybridasr.cli import make_parser, run_main


def get_parser():
    p = make_parser("ali_to_pdf.py",
                    "Converts alignments (transition-ids) to pdf-ids, using the TransitionModel "
                    "at the head of <model>. An alignment with a transition-id the model does not "
                    "have is an error naming the utterance.",
                    usage="ali_to_pdf.py [options] <model> <alignments-rspecifier> "
                          "<pdfs-wspecifier>",
                    example="ali_to_pdf.py exp/mono_ali/final.mdl "
                            "'ark:gunzip -c exp/mono_ali/ali.*.gz|' ark,t:-")
    p.add_argument("model")
    p.add_argument("alignments_rspecifier")
    p.add_argument("pdfs_wspecifier")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.align.ali_tools import ali_to_pdf

    ali_to_pdf(args.model, args.alignments_rspecifier, args.pdfs_wspecifier)
    return 0


if __name__ == "__main__":
    run_main(main)
