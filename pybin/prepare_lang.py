#!/usr/bin/env python3
"""Kaldi's utils/prepare_lang.sh: a lang dir (phones, words, topology, L.fst, phones/) from a
dict dir."""

from hybridasr.cli import add_options, make_parser, run_main
from hybridasr.lang.prepare_lang import LangOptions


def get_parser():
    p = make_parser("prepare_lang.py",
                    "Checks the dict dir (lexiconp.txt, else lexicon.txt; silence_phones.txt, "
                    "nonsilence_phones.txt, optional_silence.txt, extra_questions.txt) as "
                    "Kaldi's validate_dict_dir.pl does and writes the lang dir Kaldi's "
                    "prepare_lang.sh writes (phones.txt, words.txt, oov.txt/.int, topo, "
                    "L.fst, L_disambig.fst, phones/), and its temporary files into "
                    "<tmp-dir>. The dict dir is never written.",
                    usage="prepare_lang.py [options] <dict-src-dir> <oov-dict-entry> "
                          "<tmp-dir> <lang-dir>",
                    example="prepare_lang.py data/local/dict '<UNK>' data/local/lang data/lang")
    add_options(p, LangOptions)
    p.add_argument("dict_dir", metavar="dict-src-dir")
    p.add_argument("oov_word", metavar="oov-dict-entry",
                   help="the word that words missing from the lexicon are mapped to in "
                        "training transcripts (oov.txt); it needs a pronunciation")
    p.add_argument("tmp_dir", metavar="tmp-dir")
    p.add_argument("lang_dir", metavar="lang-dir")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    from hybridasr.lang.prepare_lang import prepare_lang
    from hybridasr.options import from_values

    prepare_lang(args.dict_dir, args.oov_word, args.tmp_dir, args.lang_dir,
                 from_values(LangOptions, args))
    return 0


if __name__ == "__main__":
    run_main(main)
