#!/usr/bin/env bash
# Exit status 0 when the toolkit's C++ lattice decoder (hybridasr/decode/native, built by
# install.sh) loads, printing nothing; 1 otherwise, with one line on stderr saying why: what
# --lattices auto|true of steps/nnet/decode.sh and steps/score.sh ask.
# e.g.: if why=$(utils/lattice_decoder_built.sh 2>&1); then echo "lattices"; else echo "$why"; fi
why=$(python3 -c 'from hybridasr.decode import native
if native.load(quiet=True) is None:
    print("the toolkit\x27s C++ lattice decoder cannot be built (%s)" % native.unavailable_reason())
    raise SystemExit(1)' 2>/dev/null) && exit 0
no_python="the toolkit's C++ lattice decoder cannot be loaded (python3 on PATH cannot import hybridasr)"
echo "${why:-$no_python}" >&2
exit 1
