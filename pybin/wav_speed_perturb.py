#!/usr/bin/env python3
"""A wav at another speed, as sox's 'speed' effect (tempo and pitch; the rate is kept): the pipe
that speed-perturbed wav.scp entries go through when sox is absent."""
import io
import sys

import numpy as np
import soundfile as sf

from hybridasr.cli import make_parser, run_main
from hybridasr.errors import FormatError
from hybridasr.features.audio import decode_audio, read_extended_filename
from hybridasr.kaldi.io.streams import OutputStream
from hybridasr.features.speed import speed_perturb, speed_ratio


def get_parser():
    p = make_parser("wav_speed_perturb.py",
                    "Reads a wav (a file, an ark:offset, a 'cmd |' or - for stdin) and writes it "
                    "at --factor times the speed (about N / factor samples at the same rate, "
                    "16-bit PCM) to a file or - (stdout). The feature programs do the same "
                    "in their own process for wav.scp entries of the form "
                    "'wav_speed_perturb.py --factor=F <in> - |'.",
                    usage="wav_speed_perturb.py --factor=F <wav-in> <wav-out>",
                    example="wav_speed_perturb.py --factor=0.9 a.wav - | ...")
    p.add_argument("--factor", required=True, help="speed factor, e.g. 0.9 (slower) or 1.1")
    p.add_argument("wav_in")
    p.add_argument("wav_out")
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    speed_ratio(args.factor)  # checks it
    try:
        if args.wav_in == "-":
            samples, rate = decode_audio(sys.stdin.buffer.read(), "stdin")
        else:
            samples, rate = read_extended_filename(args.wav_in)
    except OSError as e:
        raise FormatError(str(e)) from None
    channels = [speed_perturb(samples[:, c], args.factor) for c in range(samples.shape[1])]
    out = np.stack(channels, axis=1).astype(np.int16)
    buf = io.BytesIO()  # the whole wav first: its header then holds the true sizes
    sf.write(buf, out, rate, format="WAV", subtype="PCM_16")
    out_stream = OutputStream(args.wav_out)  # a file (atomically), - or '| cmd'
    try:
        out_stream.write(buf.getvalue())
        out_stream.commit()
    except BaseException:
        out_stream.abort()
        raise
    return 0


if __name__ == "__main__":
    run_main(main)
