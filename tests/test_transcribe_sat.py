"""transcribe.py with a model dir of a network trained on a SAT GMM's fMLLR features (run.sh
--fmllr: the model dir's ``fmllr_gmm`` names the GMM dir, kaldi_hindi_sat's tri3b_ali here):
new audio has no speaker transforms, so its network input is that GMM's speaker-independent
features (CMVN of the recording, splice, final.mat), the features make_fmllr_feats.sh writes
without --transform-dir for a data dir where the recording is its own speaker; a note says so.
What cannot follow is refused, naming why: --online, --gmm-dir, export_model.py, a missing GMM
dir. (The network has random weights: the features and the plumbing are what is checked.)"""
from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest
import torch

from hybridasr.errors import HybridAsrError
from train_helpers import load_pybin

MLP = {"model": "mlp", "hidden_size": 32, "num_layers": 1}


@pytest.fixture()
def sat_model(shared_dir, tmp_path):
    """(model dir, graph dir, two test wavs) of a random MLP over the 40-dim fMLLR features of
    kaldi_hindi_sat's tri3b_ali (spliced +-1 by its transform)."""
    from hybridasr.features.transform import FeatureTransform
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.models import build_model, save_model

    hindi = shared_dir / "data" / "kaldi_hindi_sat"
    gmm = hindi / "exp" / "tri3b_ali"
    d = tmp_path / "blstm"
    (d / "conf").mkdir(parents=True)
    for name in ("final.mdl", "tree"):
        shutil.copy(gmm / name, d / name)
    shutil.copy(hindi / "conf/mfcc.conf", d / "conf/mfcc.conf")
    (d / "fmllr_gmm").write_text(f"{gmm}\n")
    num_pdfs = read_transition_model(str(gmm / "final.mdl")).num_pdfs
    t = FeatureTransform(norm_means=True, splice=1)
    torch.manual_seed(0)
    model = build_model(MLP, t.output_dim(40), num_pdfs)
    save_model(str(d / "final.nnet"), model, MLP, {"transform": t.to_dict(),
                                                   "num_pdfs": num_pdfs})
    wavs = [hindi / "s5/digits_audio/test/pramod/2_3_0.wav",
            hindi / "s5/digits_audio/test/pramod/2_5_6.wav"]
    return d, hindi / "exp/tri3b/graph", wavs


def test_network_input_is_the_gmms_speaker_independent_features(sat_model, caplog):
    from hybridasr.decode.model_dir import load_model_dir
    from hybridasr.decode.transcribe import Recording, Transcriber, read_audio
    from hybridasr.features.cmvn import accumulate_cmvn_stats
    from hybridasr.features.fmllr import FmllrPipeline
    from hybridasr.models import load_model

    d, graph, wavs = sat_model
    model, meta = load_model(str(d / "final.nnet"), "cpu")
    md = load_model_dir(str(d))
    assert md.fmllr_gmm == str(graph.parent.parent / "tri3b_ali")
    with caplog.at_level(logging.WARNING):
        t = Transcriber(md, model, meta, str(graph))
    assert "new audio has no speaker transforms" in caplog.text
    try:
        audio = read_audio(Recording("r", str(wavs[0]), spec=str(wavs[0])))
        raw = t.raw_features(audio, str(wavs[0]))
        assert raw.shape[1] == 13
        got = t.features(audio, str(wavs[0]))
        # make_fmllr_feats.py's pipeline without transforms, the recording its own speaker
        want = FmllrPipeline.from_gmm_dir(md.fmllr_gmm)(raw, accumulate_cmvn_stats(raw), "r")
        assert got.shape == want.shape == (len(raw), 40)
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
        ll = t.loglikes(got)
        assert ll.shape == (len(raw), t.num_pdfs) and np.isfinite(ll).all()
    finally:
        t.close()


def test_transcribe_runs_and_refuses_what_cannot_follow(sat_model, tmp_path, capsys, caplog):
    d, graph, wavs = sat_model
    main = load_pybin("transcribe").main
    with caplog.at_level(logging.WARNING):
        assert main([str(d), str(graph), *map(str, wavs)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == \
        ["2_3_0", "2_5_6"]
    assert "speaker-independent features" in caplog.text
    with pytest.raises(HybridAsrError, match=r"--online: .* reads a SAT GMM's features"):
        main(["--online=true", "--chunking=40:20", str(d), str(graph), str(wavs[0])])
    with pytest.raises(HybridAsrError, match=r"--gmm-dir: .* reads fMLLR features"):
        main([f"--gmm-dir={graph.parent.parent / 'tri2b_ali'}", str(d), str(graph),
              str(wavs[0])])
    with pytest.raises(HybridAsrError, match="trained on the fMLLR features of"):
        load_pybin("export_model").main([str(d), str(tmp_path / "m.pt")])
    (d / "fmllr_gmm").write_text(f"{tmp_path / 'gone'}\n")
    with pytest.raises(HybridAsrError, match=r"gone \(.*fmllr_gmm\), which is not there"):
        main([str(d), str(graph), str(wavs[0])])
