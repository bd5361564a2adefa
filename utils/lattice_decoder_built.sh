#!/usr/bin/env bash
# Exit status 0 when the toolkit's C++ lattice decoder (hybridasr/decode/native, built by
# install.sh) loads, 1 otherwise: what --lattices auto of steps/nnet/decode.sh and
# steps/score.sh asks. Prints nothing.
# e.g.: if utils/lattice_decoder_built.sh; then echo "lattices"; fi
python3 -c 'from hybridasr.decode import lattice_faster as l
raise SystemExit(0 if l.available() else 1)' 2>/dev/null
