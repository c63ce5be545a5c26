import click

from .common import command, job_option
from ..options import shared_option
from ..io.specifiers import OutputType
from ..click_types import Count, Real, TEXT_INPUT


@command("feats")
@job_option
@click.option("--sample-rate", type=Count(1), default=16000,
              help="Expected sample rate (Hz); a file at another rate is an error.")
@click.option("--frame-length", type=Real(0, min_open=True), default=25.0, help="Window length (ms).")
@shared_option("frame_shift", default=10.0)
@click.option("--num-ceps", type=Count(1), default=13, help="Cepstra per frame (before deltas).")
@click.option("--num-filters", type=Count(1), default=26, help="Mel filters.")
@click.option("--nfft", type=Count(1), default=512, help="FFT size (>= window length in samples).")
@click.option("--low-freq", type=Real(0), default=0.0, help="Lowest mel filter edge (Hz).")
@click.option("--high-freq", type=Real(0, min_open=True), default=None,
              help="Highest mel filter edge (Hz).  [default: Nyquist]")
@click.option("--use-energy/--no-use-energy", default=True,
              help="Replace c0 by the log frame energy.")
@click.option("--delta-window", type=Count(1), default=2,
              help="Deltas regress over +-N frames (also for delta-deltas).")
@click.option("--preemph", type=Real(0, 1, max_open=True), default=0.97, help="Pre-emphasis coefficient (0: none).")
@click.option("--ceplifter", type=Count(0), default=22, help="Cepstral liftering (0: none).")
@click.option("--window-type", "window", type=click.Choice(["hamming", "hann", "rectangular"]),
              default="hamming", help="Analysis window (Kaldi's option name).")
@click.option("--cmvn", type=click.Choice(["none", "utt", "spk"]), default="none",
              help="Mean and variance normalisation per utterance or per speaker (--utt2spk).")
@click.option("--utt2spk", type=TEXT_INPUT,
              help="`utt-id speaker` list, for --cmvn spk.  [default: a data directory's]")
@shared_option("segments", help="Kaldi segments file `utt-id recording-id start end` "
                                 "(seconds): utterances are these stretches of WAV_SCP's "
                                 "recordings.")
@click.option("--max-overshoot", type=Real(0), default=0.0,
              help="Seconds a segment may end past the end of its recording (it is cut "
                   "there); further is an error.")
@shared_option("reco2file_and_channel",
               help="Kaldi `recording-id file channel` list: the channel (A/B or 1/2) to take "
                    "from multi-channel recordings.")
@click.argument("wav_scp", type=click.Path(allow_dash=True))
@click.argument("out", type=OutputType("features"))
def feats(job, cmvn, utt2spk, segments, max_overshoot, reco2file_and_channel, wav_scp, out,
          **mfcc):
    """Audio list (wav.scp) or Kaldi data directory -> an archive of MFCC features.

    13 MFCCs + deltas + delta-deltas = 39 dimensions per 10 ms frame, by
    python_speech_features; NIST SPHERE (TIMIT) and RIFF WAV audio. WAV_SCP lines are
    `id path` or, as Kaldi writes them, `id command args |` (the command's output is the
    audio; run without a shell unless it uses shell syntax). WAV_SCP may be a Kaldi data
    directory: its wav.scp, segments, reco2file_and_channel and (for --cmvn spk) utt2spk
    are used (check it first with `rhmmtk validate-data-dir`). OUT is an rhmmtk HDF5
    archive, a Kaldi wspecifier (ark:F, ark,t:F, ark,scp:F.ark,F.scp, ark:-, 'ark:| CMD')
    or htk:DIR. Examples:

    \b
      rhmmtk feats --cmvn spk --utt2spk data/train/utt2spk data/train/wav.scp train.feats.h5
      rhmmtk feats --cmvn spk data/train train.feats.h5

    With --job K/N, shard K of the list (with --cmvn spk, of its speakers).
    """
    from ..frontend.acoustic import MfccConfig, compute_features, shard_sources
    from ..io.text import check_outputs

    check_outputs(out, inputs=[wav_scp, utt2spk])
    options = names = None
    if job is not None:
        wav_scp, utt2spk, options, names = shard_sources(wav_scp, segments,
                                                         reco2file_and_channel, utt2spk, cmvn,
                                                         job)
        segments = reco2file_and_channel = None
    compute_features(wav_scp, out, MfccConfig(**mfcc), cmvn=cmvn, utt2spk=utt2spk,
                     options=options, segments=segments, names=names,
                     reco2file_and_channel=reco2file_and_channel, max_overshoot=max_overshoot)
