"""The speech front end: `rhmmtk feats` against python_speech_features, deltas, CMVN, errors."""
import numpy as np
import pytest
import soundfile as sf
from python_speech_features import delta, mfcc

from cli_helpers import fails, run
from rhmmtk.frontend.acoustic import (MfccConfig, add_deltas, audio_info, compute_features, num_frames,
                             read_audio)
from rhmmtk.errors import InputError
from rhmmtk.io.archive import Archive

SR = 16000


def synthetic_signal(rng, seconds=0.83, sr=SR):
    """A chirp plus noise, as 16-bit samples."""
    t = np.arange(int(seconds * sr)) / sr
    x = 6000 * np.sin(2 * np.pi * (200 + 1500 * t) * t) + 300 * rng.standard_normal(len(t))
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def write(path, samples, sr=SR, fmt="WAV"):
    sf.write(str(path), samples, sr, format=fmt, subtype="PCM_16")
    return path


def reference(samples, **kw):
    """python_speech_features called directly, with rhmmtk's default settings."""
    c = mfcc(samples.astype(np.float64), samplerate=SR, winlen=0.025, winstep=0.01, numcep=13,
             nfilt=26, nfft=512, preemph=0.97, ceplifter=22, appendEnergy=True,
             winfunc=np.hamming, **kw)
    d = delta(c, 2)
    return np.hstack([c, d, delta(d, 2)]).astype(np.float32)


@pytest.fixture
def corpus(tmp_path, rng):
    """Two utterances, one RIFF WAV and one NIST SPHERE with a lower-case .wav name."""
    a, b = synthetic_signal(rng, 0.83), synthetic_signal(rng, 1.21)
    pa = write(tmp_path / "a.wav", a)
    pb = write(tmp_path / "b.wav", b, fmt="NIST")
    scp = tmp_path / "wav.scp"
    scp.write_text(f"uttA {pa}\nuttB {pb}\n")
    return {"uttA": a, "uttB": b}, scp


def test_frame_count_matches_python_speech_features():
    from python_speech_features.sigproc import framesig

    for n in (1, 200, 399, 400, 401, 559, 560, 561, 30400, 30401):
        assert num_frames(n, 400, 160) == len(framesig(np.ones(n), 400, 160)), n


def test_feats_equal_python_speech_features(corpus, tmp_path):
    signals, scp = corpus
    out = tmp_path / "feats.h5"
    run("feats", "--quiet", scp, out)
    with Archive(out, expect_kind="features") as ar:
        assert ar.keys() == ["uttA", "uttB"]
        assert int(ar.attrs["dim"]) == 39
        assert float(ar.attrs["frame_shift"]) == 0.01 and float(ar.attrs["frame_length"]) == 0.025
        assert "feats" in ar.attrs["created_by"]
        for key, samples in signals.items():
            got = ar[key]
            assert got.dtype == np.float32 and got.shape == (num_frames(len(samples)), 39)
            np.testing.assert_array_equal(got, reference(samples))


def test_sphere_and_wav_read_alike(tmp_path, rng):
    x = synthetic_signal(rng, 0.3)
    wav = write(tmp_path / "x.WAV", x)
    sph = write(tmp_path / "x.sph", x, fmt="NIST")
    assert open(sph, "rb").read(7) == b"NIST_1A"
    np.testing.assert_array_equal(read_audio(wav), x.astype(np.float64))
    np.testing.assert_array_equal(read_audio(sph), x.astype(np.float64))


def test_deltas_hand_checked():
    # x_t = t^2 for t = 0..4; edges repeat the first / last frame.
    feat = np.array([[0.0], [1.0], [4.0], [9.0], [16.0]])
    out = add_deltas(feat, 1)
    # N=1: d_t = (x_{t+1} - x_{t-1}) / 2
    d1 = np.array([0.5, 2.0, 4.0, 6.0, 3.5])
    # delta of d1, same rule
    d2 = np.array([0.75, 1.75, 2.0, -0.25, -1.25])
    np.testing.assert_allclose(out[:, 0], feat[:, 0])
    np.testing.assert_allclose(out[:, 1], d1)
    np.testing.assert_allclose(out[:, 2], d2)
    # N=2: d_t = (-2 x_{t-2} - x_{t-1} + x_{t+1} + 2 x_{t+2}) / 10; at t=2: (0-1+9+32)/10
    assert add_deltas(feat, 2)[2, 1] == pytest.approx(4.0)
    # at t=0 with padding x_{-2} = x_{-1} = 0: (0 - 0 + 1 + 8)/10
    assert add_deltas(feat, 2)[0, 1] == pytest.approx(0.9)


def test_options_reach_python_speech_features(corpus, tmp_path):
    signals, scp = corpus
    cfg = MfccConfig(num_ceps=12, num_filters=40, low_freq=100, high_freq=7000,
                     use_energy=False, preemph=0.9, delta_window=1, window="rectangular")
    out = tmp_path / "f.h5"
    compute_features(scp, out, cfg)
    x = signals["uttA"].astype(np.float64)
    c = mfcc(x, SR, numcep=12, nfilt=40, lowfreq=100, highfreq=7000, appendEnergy=False,
             preemph=0.9)
    d = delta(c, 1)
    with Archive(out) as ar:
        np.testing.assert_array_equal(ar["uttA"], np.hstack([c, d, delta(d, 1)]).astype(np.float32))
        assert int(ar.attrs["dim"]) == 36


def test_cmvn_utt_and_spk(corpus, tmp_path):
    signals, scp = corpus
    raw, utt, spk = (tmp_path / f"{n}.h5" for n in ("raw", "utt", "spk"))
    u2s = tmp_path / "utt2spk"
    u2s.write_text("uttA s1\nuttB s1\n")
    compute_features(scp, raw)
    compute_features(scp, utt, cmvn="utt")
    compute_features(scp, spk, cmvn="spk", utt2spk=u2s)
    with Archive(raw) as r, Archive(utt) as u, Archive(spk) as s:
        for k in r.keys():
            x = r[k].astype(np.float64)
            np.testing.assert_allclose(u[k], (x - x.mean(0)) / x.std(0), rtol=1e-4, atol=1e-4)
        both = np.vstack([r[k] for k in r.keys()]).astype(np.float64)
        mean, std = both.mean(0), both.std(0)
        for k in r.keys():
            np.testing.assert_allclose(s[k], (r[k] - mean) / std, rtol=1e-4, atol=1e-4)
        assert s.attrs["cmvn"] == "spk"


def test_library_errors(tmp_path, rng):
    x = synthetic_signal(rng, 0.5)
    sph = write(tmp_path / "s.WAV", x, fmt="NIST")
    data = sph.read_bytes()
    (tmp_path / "cut.WAV").write_bytes(data[: len(data) - 500])
    with pytest.raises(InputError, match="truncated audio"):
        audio_info(tmp_path / "cut.WAV", utt="u1")
    with pytest.raises(InputError, match="no such audio file"):
        audio_info(tmp_path / "nope.wav")
    with pytest.raises(InputError, match="8000 Hz, expected 16000"):
        audio_info(write(tmp_path / "lo.wav", x, sr=8000), 16000)
    stereo = tmp_path / "st.wav"
    sf.write(str(stereo), np.stack([x, x], 1), SR, subtype="PCM_16")
    with pytest.raises(InputError, match="mono"):
        audio_info(stereo)
    with pytest.raises(InputError, match="nfft"):
        MfccConfig(nfft=256).validate()
    with pytest.raises(InputError, match="num-ceps"):
        MfccConfig(num_ceps=30).validate()


def test_cli_errors_name_file_and_utterance(corpus, tmp_path, rng):
    signals, scp = corpus
    x = synthetic_signal(rng, 0.5)
    good = write(tmp_path / "good.wav", x)
    wav = write(tmp_path / "t.wav", x).read_bytes()
    (tmp_path / "trunc.wav").write_bytes(wav[: len(wav) // 2])
    (tmp_path / "junk.wav").write_bytes(b"this is not audio\n" * 10)
    write(tmp_path / "8k.wav", x, sr=8000)
    cases = {"trunc.wav": "truncated audio", "junk.wav": "unreadable audio",
             "8k.wav": "sample rate is 8000 Hz", "missing.wav": "no such audio file"}
    for name, problem in cases.items():
        lst = tmp_path / f"{name}.scp"
        lst.write_text(f"u1 {good}\nbad_utt {tmp_path / name}\n")
        err = fails("feats", lst, tmp_path / "out.h5")
        line = err.strip().splitlines()[-1]
        assert problem in line and name in line and "utterance bad_utt" in line, err
        assert not (tmp_path / "out.h5").exists()
    err = fails("feats", "--cmvn", "spk", scp, tmp_path / "out.h5")
    assert "--utt2spk" in err
    u2s = tmp_path / "u2s"
    u2s.write_text("uttA s1\n")
    err = fails("feats", "--cmvn", "spk", "--utt2spk", u2s, scp, tmp_path / "out.h5")
    assert "uttB" in err and "utt2spk" in err
