"""Streaming transcription (hybridasr.decode.online, transcribe.py --online) on real audio:
features of audio given in pieces equal those of the whole recording (dither and both framings,
frames out as soon as their samples are in); online CMVN in blocks equals ``online_cmvn``; the
network run window by window as frames arrive equals ``Transcriber.loglikes`` with the same
``--chunking``; ``--online`` gives the words and CTM of the offline transcription at the same
chunking (the training chunking from train.conf by default); what cannot stream is refused,
named. The model dirs: kaldi_digits' monophone model and graph with fresh networks of random
weights (the equalities do not need a trained model; the words are many and varied)."""
from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from hybridasr.decode.model_dir import load_model_dir, read_feature_conf
from hybridasr.decode.online import ChunkedAcousticModel, OnlineRecognizer, training_chunking
from hybridasr.decode.transcribe import Recording, TranscribeOptions, Transcriber, read_audio
from hybridasr.errors import ConfigError, HybridAsrError
from hybridasr.features.extractor import FeatureExtractor
from hybridasr.features.online_cmvn import global_cmvn_stats, online_cmvn, write_stats
from hybridasr.features.online_features import OnlineCmvnState, OnlineFeatures
from hybridasr.features.transform import FeatureTransform
from train_helpers import load_pybin


@pytest.fixture(autouse=True)
def one_thread():
    """Small windows, small matrices: one thread (two spin against each other on a busy
    machine, ten times slower)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _pieces(x, rng, most=3000):
    """``x`` cut at random places (empty pieces and single samples among them)."""
    out, i = [], 0
    while i < len(x):
        k = int(rng.choice([0, 1, int(rng.integers(2, most))]))
        out.append(x[i:i + k])
        i += k
    return out


def _wav(path):
    x, rate = sf.read(str(path), dtype="int16")
    return x.astype(np.float32), rate


@pytest.mark.parametrize("which,changes", [
    ("digits", {}), ("digits", {"snip_edges": False}), ("polish", {}),
    ("polish", {"snip_edges": False, "dither": 0.0})])
def test_features_of_pieces_are_the_whole_recordings(kaldi_digits, kaldi_polish, which, changes):
    """Dither (seeded by the recording id) and all: the frames of the pieces are the
    extractor's of the whole recording; with snip_edges every frame is out once its window's
    samples are in (8 kHz, a 200-sample window: frames in pairs while dithering)."""
    if which == "digits":
        wav, conf = kaldi_digits / "digits_audio/test/theo_1/7.wav", kaldi_digits / "conf/mfcc.conf"
    else:
        wav = kaldi_polish / "polish_audio/test/mankevich/183940_2991.wav"
        conf = kaldi_polish / "conf/mfcc.conf"
    x, rate = _wav(wav)
    opts = dataclasses.replace(read_feature_conf(str(conf)), **changes)
    assert opts.sample_frequency == rate
    ex = FeatureExtractor(opts)
    want = ex.compute(x, key="rec-a")
    online = OnlineFeatures(ex)
    rng = np.random.default_rng(len(x))
    for attempt in range(2):  # start() resets everything
        online.start("rec-a")
        got, n = [], 0
        for piece in _pieces(x, rng, most=len(x) // 6):
            got.append(online.accept(piece))
            n += len(piece)
            if opts.snip_edges:
                ready = opts.num_frames(n)
                if opts.dither and online.noise_group > 1:
                    ready -= ready % online.noise_group
                assert online.num_frames == ready
            else:  # frames whose centred window lies within the samples
                assert online.num_frames <= opts.num_frames(n)
        before = online.num_frames
        got.append(online.finish())
        got = np.concatenate(got)
        assert got.shape == want.shape and len(want) > 30
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        if not opts.snip_edges:
            assert 0 < len(want) - before <= opts.window_size // opts.window_shift
    if opts.dither:  # the noise is the recording's: another id, other features
        online.start("rec-b")
        other = np.concatenate([online.accept(x), online.finish()])
        assert np.abs(other - want).max() > 1e-3


@pytest.mark.parametrize("norm_vars", [False, True])
def test_online_cmvn_in_blocks_is_online_cmvn(kaldi_digits, kaldi_polish, norm_vars):
    x, _ = _wav(kaldi_polish / "polish_audio/test/mankevich/183940_2992.wav")
    feats = FeatureExtractor(read_feature_conf(str(kaldi_polish / "conf/mfcc.conf"))).compute(x)
    assert len(feats) > 700
    g = global_cmvn_stats(f"scp:{kaldi_digits}/data/train/cmvn.scp", str(kaldi_digits))
    rng = np.random.default_rng(3)
    for window, global_frames in ((600, 200), (30, 10)):
        state = OnlineCmvnState(g, norm_vars, window, global_frames)
        cuts = np.sort(rng.integers(0, len(feats), 40))
        got = np.concatenate([state.apply(b) for b in np.split(feats, cuts)])
        np.testing.assert_allclose(got, online_cmvn(feats, g, norm_vars, window, global_frames),
                                   rtol=0, atol=1e-6)
        assert len(state._csum) <= window + 1  # only the window is kept


def _model_dir(path: Path, kaldi_digits: Path, config: dict, transform: dict,
               scale: float, seed: int = 0) -> Path:
    """A model dir as train.sh writes one: a fresh network (random weights), kaldi_digits'
    monophone model, its feature conf and the training set's global CMVN stats."""
    from hybridasr.kaldi.transition_model import read_transition_model
    from hybridasr.models import build_model, save_model

    path.mkdir()
    mdl = kaldi_digits / "exp/mono/final.mdl"
    if mdl.stat().st_size < 64:  # a flattened symlink: the file names its target
        mdl = mdl.parent / mdl.read_text().strip()
    shutil.copy(mdl, path / "final.mdl")
    (path / "conf").mkdir()
    shutil.copy(kaldi_digits / "conf/mfcc.conf", path / "conf/mfcc.conf")
    write_stats(str(path / "global_cmvn.stats"),
                global_cmvn_stats(f"scp:{kaldi_digits}/data/train/cmvn.scp", str(kaldi_digits)))
    num_pdfs = read_transition_model(str(path / "final.mdl")).num_pdfs
    counts = np.random.default_rng(seed).integers(50, 500, num_pdfs)
    (path / "ali_train_pdf.counts").write_text(f"[ {' '.join(map(str, counts))} ]\n")
    t = FeatureTransform.from_dict(transform)
    torch.manual_seed(seed)
    model = build_model(config, t.output_dim(13), num_pdfs)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, scale)
    save_model(str(path / "final.nnet"), model, config,
               {"transform": t.to_dict(), "num_pdfs": num_pdfs, "objective": "xent"})
    return path


@pytest.fixture(scope="module")
def blstm_dir(tmp_path_factory, kaldi_digits):
    return _model_dir(tmp_path_factory.mktemp("online") / "blstm", kaldi_digits,
                      {"model": "blstm", "num_layers": 2, "hidden_size": 32}, {}, 0.4)


def _transcriber(model_dir: Path, graph: Path, **opts) -> Transcriber:
    from hybridasr.models import load_model

    model, meta = load_model(str(model_dir / "final.nnet"), torch.device("cpu"))
    transform = FeatureTransform.from_dict(meta["transform"])
    md = load_model_dir(str(model_dir), cmvn=opts.pop("cmvn", "auto"),
                        norm_means=transform.norm_means)
    return Transcriber(md, model, meta, str(graph), TranscribeOptions(**opts))


def _test_wavs(kaldi_digits, every=1):
    lines = (kaldi_digits / "data/test/wav.scp").read_text().splitlines()[::every]
    return [(k, kaldi_digits / v) for k, v in (line.split() for line in lines)]


@pytest.mark.parametrize("kind", ["blstm", "lstm_with_every_transform_step"])
def test_windows_as_frames_arrive_are_the_offline_loglikes(blstm_dir, kaldi_digits, tmp_path,
                                                           kind):
    """The chunked network fed CMVN'd frames in random blocks: the log-likelihoods of
    ``Transcriber.loglikes`` with the same --chunking (deltas, splicing, subsampling and a
    label delay too), each window run as soon as its right context is in."""
    graph = kaldi_digits / "exp/mono/graph"
    if kind == "blstm":
        model_dir, chunking = blstm_dir, "30:10"
    else:
        model_dir, chunking = _model_dir(
            tmp_path / "lstm", kaldi_digits, {"model": "lstm", "num_layers": 1,
                                              "hidden_size": 24},
            {"delta_order": 1, "splice": 1, "subsample": 2, "label_delay": 2}, 0.3), "16:6"
    t = _transcriber(model_dir, graph, chunking=chunking)
    rng = np.random.default_rng(7)
    worst, lengths, trimmed = 0.0, set(), False
    for key, wav in _test_wavs(kaldi_digits, every=5):
        rec = Recording(key, str(wav), spec=str(wav))
        feats = t.features(read_audio(rec), rec.source)
        want = t.loglikes(feats)
        am = ChunkedAcousticModel(t, t.chunks)
        got, size, step = [], *map(int, chunking.split(":"))
        for block in np.split(feats, np.sort(rng.integers(0, len(feats), 8))):
            got.append(am.accept(block))
            # each window once its right context is in (the transform's context too)
            ready = am._rows_ready()
            assert am._next_window == max(0, (ready - (size - step) // 2) // step)
        trimmed |= am._base > 0  # the frames no window needs any more are dropped
        got.append(am.finish())
        got = np.concatenate(got)
        assert got.shape == want.shape == (len(feats), t.num_pdfs)
        worst = max(worst, float(np.abs(got - want).max()))
        lengths.add(len(feats))
    assert worst < 1e-5 and len(lengths) >= 4 and trimmed
    # the windows matter: whole recordings give other log-likelihoods
    whole = _transcriber(model_dir, graph)
    assert np.abs(whole.loglikes(feats) - want).max() > 1e-3


def test_online_gives_the_offline_words_and_ctm(blstm_dir, kaldi_digits, tmp_path, capsys):
    """transcribe.py --online (0.1 s pieces, and 0.03 s) on the 30 kaldi_digits test wavs: the
    words and CTM of transcribe.py at the same --chunking; partials on stderr only with
    --print-partial; without --chunking the model's training chunking (train.conf)."""
    main = load_pybin("transcribe").main
    graph = kaldi_digits / "exp/mono/graph"
    scp = tmp_path / "wav.scp"
    scp.write_text("".join(f"{k} {w}\n" for k, w in _test_wavs(kaldi_digits)))
    common = ["--wav-scp", str(scp), str(blstm_dir), str(graph)]
    assert main(["--chunking=30:10", f"--ctm={tmp_path}/off.ctm"] + common) == 0
    offline = capsys.readouterr().out
    lines = offline.splitlines()
    assert len(lines) == 30 and sum(len(line.split()) - 1 for line in lines) >= 12
    assert len({line.split(maxsplit=1)[-1] for line in lines}) >= 5  # varied words
    assert main(["--online", "--chunking=30:10", f"--ctm={tmp_path}/on.ctm"] + common) == 0
    out = capsys.readouterr()
    assert out.out == offline and "(partial)" not in out.err
    assert (tmp_path / "on.ctm").read_text() == (tmp_path / "off.ctm").read_text() != ""
    assert main(["--online", "--print-partial", "--piece-seconds=0.03",
                 "--chunking=30:10"] + common) == 0
    out = capsys.readouterr()
    assert out.out == offline and "(partial)" not in out.out
    partial = [line for line in out.err.splitlines() if "(partial)" in line]
    rec = OnlineRecognizer(_transcriber(blstm_dir, graph, chunking="30:10"))
    assert all(line.split()[0] in offline for line in partial)
    if rec.incremental:  # the decoder's best path so far, after the pieces
        assert len(partial) >= 10
    # the training chunking by default
    (blstm_dir / "train.conf").write_text("# resolved configuration of: train.py ...\n"
                                          "--chunking=24:12\n--chunking-loss=once\n")
    try:
        assert training_chunking(str(blstm_dir)) == "24:12"
        assert main(["--chunking=24:12"] + common) == 0
        want = capsys.readouterr().out
        assert want != offline
        assert main(["--online"] + common) == 0
        assert capsys.readouterr().out == want
    finally:
        (blstm_dir / "train.conf").unlink()


class _AdvancedFrames:
    """The lattice decoder with the incremental API over what it was given (each partial a
    search of the frames so far): records what the recognizer advanced it by."""

    def __init__(self, decoder, words_of):
        self.decoder, self.words_of, self.advanced = decoder, words_of, []

    def __getattr__(self, name):
        return getattr(self.decoder, name)

    def online_start(self, acoustic_scale=0.1, utt=""):
        self.scale, self.utt, self.advanced = acoustic_scale, utt, []

    def online_advance(self, loglikes):
        assert loglikes.ndim == 2 and len(loglikes) > 0
        self.advanced.append(np.array(loglikes))

    def online_partial_words(self):
        return self.words_of(self.utt, self.decoder.decode(np.concatenate(self.advanced),
                                                           self.scale, self.utt))[0]

    def online_finish(self):
        return self.decoder.decode(np.concatenate(self.advanced), self.scale, self.utt)

    def online_finish_words(self):  # (the words at the search's scale: the default LM weight)
        self.finished_words = True
        return self.words_of(self.utt, self.online_finish())[0]


def test_the_decoder_is_advanced_piece_by_piece(blstm_dir, kaldi_digits):
    """With a decoder that has the incremental API: it is advanced as pieces come, by the
    offline log-likelihoods in order, each frame once; the partials are its words so far;
    the final words the offline ones."""
    t = _transcriber(blstm_dir, kaldi_digits / "exp/mono/graph", chunking="30:10")
    t.lattice_decoder = fake = _AdvancedFrames(t.lattice_decoder, t.words_of)
    online = OnlineRecognizer(t)
    assert online.incremental
    some_partial = False
    for key, wav in _test_wavs(kaldi_digits, every=3):
        rec = Recording(key, str(wav), spec=str(wav))
        want = t.loglikes(t.features(read_audio(rec), rec.source))
        partials = []
        got = online.transcribe(rec, 0.1, lambda k, words: partials.append(words))
        assert got.error is None and got.words == t.transcribe(rec).words
        assert len(fake.advanced) >= 2  # before finish too
        np.testing.assert_allclose(np.concatenate(fake.advanced), want, rtol=0, atol=1e-5)
        assert all(isinstance(w, str) for p in partials for w in p)
        some_partial |= any(partials)
    assert some_partial


def test_what_cannot_stream_is_refused_named(blstm_dir, kaldi_digits, tmp_path, caplog,
                                             capsys):
    main = load_pybin("transcribe").main
    graph = kaldi_digits / "exp/mono/graph"
    good = kaldi_digits / "digits_audio/test/theo_1/2.wav"
    with pytest.raises(ConfigError, match="per recording .* cannot stream"):
        main(["--online", "--cmvn=utterance", str(blstm_dir), str(graph), str(good)])
    with pytest.raises(ConfigError, match="--chunking=30:11: needs an even size - step"):
        main(["--online", "--chunking=30:11", str(blstm_dir), str(graph), str(good)])
    chain = tmp_path / "chain"  # a Kaldi chain dir's marker: a chain model
    shutil.copytree(blstm_dir, chain)
    (chain / "frame_subsampling_factor").write_text("1\n")
    with pytest.raises(ConfigError, match="a chain model's outputs are those of whole rec"):
        main(["--online", str(chain), str(graph), str(good)])
    (tmp_path / "model.pt").write_bytes(b"x")
    with pytest.raises(ConfigError, match="not an exported model"):
        main(["--online", str(tmp_path / "model.pt"), str(graph), str(good)])
    # a recording at another rate, one too short for a frame: named, the others transcribed
    x, rate = sf.read(str(good), dtype="int16")
    sf.write(str(tmp_path / "fast.wav"), np.repeat(x, 2), 2 * rate, subtype="PCM_16")
    sf.write(str(tmp_path / "short.wav"), x[:150], rate, subtype="PCM_16")
    caplog.clear()
    with caplog.at_level(logging.WARNING), \
            pytest.raises(HybridAsrError, match="2 of 3 recordings could not be transcribed"):
        main(["--online", "--chunking=30:10", str(blstm_dir), str(graph), str(good),
              str(tmp_path / "fast.wav"), str(tmp_path / "short.wav")])
    assert capsys.readouterr().out.split()[0] == "2"
    assert f"{tmp_path}/fast.wav: sample rate 16000 Hz, but the model's features are 8000 Hz" \
        in caplog.text and "--online takes audio at the features' rate" in caplog.text
    assert f"{tmp_path}/short.wav: too short for one frame" in caplog.text
