"""transcribe.py with a model dir of a network trained on a SAT GMM's fMLLR features (run.sh
--fmllr: the model dir's ``fmllr_gmm`` names the GMM dir, kaldi_hindi_sat's tri3b_ali here):
new audio has no speaker transforms, so each speaker (--utt2spk; else each recording) is
adapted as Kaldi's decode_fmllr.sh does: the GMM's speaker-independent features (the
speaker's CMVN, splice, final.mat: make_fmllr_feats.sh's without --transform-dir), then an
fMLLR transform estimated from the GMM's own passes; a note says so. What cannot follow is
refused, naming why: --online, --gmm-dir, export_model.py, a missing GMM dir, a recording
without a speaker. (The network has random weights: the features and the plumbing are
checked; docs/transcribe.md has the WERs of the recipe's network.)"""
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


def test_network_input_is_the_adapted_features(sat_model, caplog):
    from hybridasr.decode.model_dir import load_model_dir
    from hybridasr.decode.transcribe import (Recording, Transcriber, TranscribeOptions,
                                             read_audio)
    from hybridasr.features.cmvn import accumulate_cmvn_stats
    from hybridasr.features.fmllr import FmllrPipeline, apply_transform
    from hybridasr.features.fmllr_estimate import FmllrAccs
    from hybridasr.models import load_model

    d, graph, wavs = sat_model
    model, meta = load_model(str(d / "final.nnet"), "cpu")
    md = load_model_dir(str(d))
    assert md.fmllr_gmm == str(graph.parent.parent / "tri3b_ali")
    with caplog.at_level(logging.WARNING):
        t = Transcriber(md, model, meta, str(graph))
    assert "as Kaldi's decode_fmllr.sh" in caplog.text
    try:
        recs = [Recording(w.stem, str(w), spec=str(w)) for w in wavs]
        raws = [t.raw_features(read_audio(r), r.source) for r in recs]
        assert raws[0].shape[1] == 13
        # the speaker-independent part: make_fmllr_feats.py's pipeline without transforms
        pipe = FmllrPipeline.from_gmm_dir(md.fmllr_gmm)
        si = [pipe(x, accumulate_cmvn_stats(x), "r") for x in raws]
        np.testing.assert_allclose(t.sat.si_features(raws[0], accumulate_cmvn_stats(raws[0])),
                                   si[0], atol=1e-5, rtol=0)
        # each recording its own speaker: its own transform, which moves the features
        got = t.features(read_audio(recs[0]), recs[0].source)
        # Kaldi's --fmllr-min-count 500: too few frames, the features stay unadapted
        t.sat.min_count = 500.0
        np.testing.assert_allclose(t.features(read_audio(recs[0]), recs[0].source), si[0],
                                   atol=1e-5, rtol=0)
        t.sat.min_count = TranscribeOptions().fmllr_min_count
        W = t.sat.transform([si[0]], t._first_pass, "r")
        np.testing.assert_allclose(got, apply_transform(si[0], W), atol=1e-4, rtol=0)
        assert got.shape == (len(raws[0]), 40) and np.abs(got - si[0]).max() > 0.1
        # a speaker of both: shared CMVN stats (their sum) and one transform
        t.use_speakers(recs, {r.key: "pramod" for r in recs})
        stats = accumulate_cmvn_stats(raws[1], accumulate_cmvn_stats(raws[0]))
        np.testing.assert_allclose(t.spk_cmvn["pramod"], stats)
        si2 = [pipe(x, stats, "pramod") for x in raws]
        W2 = t.spk_transform["pramod"]
        assert list(t.spk_transform) == ["pramod"] and not np.allclose(W2, W)
        np.testing.assert_allclose(t.features(read_audio(recs[1]), recs[1].source),
                                   apply_transform(si2[1], W2), atol=1e-4, rtol=0)
        ll = t.loglikes(got)
        assert ll.shape == (len(raws[0]), t.num_pdfs) and np.isfinite(ll).all()
        # the transform beats the identity on its speaker's statistics (final.mdl's pass)
        acc = FmllrAccs(t.sat.gmm)
        for x in si2:  # the pass's lattice posteriors: each frame's sum to 1
            frames, tids, post = t._first_pass(t.sat.gmm.log_likelihoods(x), 0.083333)
            np.testing.assert_allclose(np.bincount(frames, weights=post), 1.0, atol=1e-6)
            acc.accumulate(x[frames], t.sat.tid2pdf[tids], post)
        assert acc.objective(W2) > acc.objective(np.hstack([np.eye(40), np.zeros((40, 1))]))
    finally:
        t.close()


def test_transcribe_runs_and_refuses_what_cannot_follow(sat_model, tmp_path, capsys, caplog):
    d, graph, wavs = sat_model
    main = load_pybin("transcribe").main
    with caplog.at_level(logging.WARNING):
        assert main([str(d), str(graph), *map(str, wavs)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == \
        ["2_3_0", "2_5_6"]
    assert "decode_fmllr.sh" in caplog.text
    (tmp_path / "utt2spk").write_text("2_3_0 pramod\n")
    with pytest.raises(HybridAsrError, match="--utt2spk: no speaker for recording 2_5_6"):
        main([f"--utt2spk={tmp_path / 'utt2spk'}", str(d), str(graph), *map(str, wavs)])

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
    (d / "fmllr_gmm").unlink()  # fMLLR inputs without the record: the error says what to add
    with pytest.raises(HybridAsrError, match=r"expects 120: not the conf .* write that GMM "
                                             r"dir's path into .*/blstm/fmllr_gmm"):
        main([str(d), str(graph), str(wavs[0])])
