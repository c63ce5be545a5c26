"""Options defined once: a dataclass per estimator or decoder whose fields carry their
command-line declaration.

The same class gives the library its defaults (construct it in Python) and the command
line its click options (`click_options`), so a default cannot differ between the two,
and a new trainer gets shared option groups (jobs, seeds, dev selection) by listing
their classes. Kaldi does the same with option structs that register themselves.

    @dataclasses.dataclass
    class EmOptions:
        step: float = option("--step-size", default=0.5, type=Real(0), help="...")
        m: int = shared("states", default=4, help="...")    # a name other commands take too

    @command("train-em")
    @click_options(EmOptions)
    def train_em(**kw):
        opts = take(EmOptions, kw)       # an EmOptions, and its keys removed from kw
"""
import dataclasses

import click


def option(*decls, default, help, type=None, is_flag=False, **click_kw):
    """A dataclass field that is also a click option (`decls` as click's, no dest name)."""
    spec = dict(decls=decls, help=help, type=type, is_flag=is_flag, **click_kw)
    return dataclasses.field(default=default, metadata={"click": spec})


def click_options(*classes, only=None, defaults=None):
    """Decorator adding every field of `classes` as a click option, in field order; with
    `only`, just the fields of those names (a command that takes part of a group), and
    `defaults` overriding a field's default for this command (e.g. None: "keep the
    model's")."""
    defaults = defaults or {}

    def deco(func):
        for cls in reversed(classes):
            for f in reversed(dataclasses.fields(cls)):
                spec = dict(f.metadata.get("click") or {})
                if not spec or (only is not None and f.name not in only):
                    continue
                decls = spec.pop("decls")
                kw = {k: v for k, v in spec.items() if v is not None and v is not False}
                func = click.option(*decls, f.name, default=defaults.get(f.name, f.default),
                                    show_default=True, **kw)(func)
        return func

    return deco


def take(cls, kwargs):
    """Build `cls` from the matching keys of a click kwargs dict, removing them from it."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{k: kwargs.pop(k) for k in names if k in kwargs})


def as_dict(opts):
    """The options as a plain dict (recorded in provenance and model info)."""
    return dataclasses.asdict(opts)


# Options that several commands take, declared once here: a name means the same thing, in
# the same units, in every command (HTK's rule). A command may narrow the type or give its
# own default and help (EM's iteration count is not k-means'), never another name.
def _shared_specs():
    from .click_types import Count, Real, SEED, HDF5_INPUT, TEXT_INPUT, TEXT_OUTPUT

    return {
        "seed": dict(decls=("--seed",), type=SEED, default=0, help="Random seed."),
        "iters": dict(decls=("--iters",), type=Count(0), default=None, help="Iterations."),
        "states": dict(decls=("-m", "--states"), type=Count(1), default=None,
                       help="Hidden states per label."),
        "json": dict(decls=("--json",), is_flag=True, default=False,
                     help="Print one JSON object instead of the report."),
        "mapping": dict(decls=("--mapping",), type=TEXT_INPUT, default=None, metavar="FILE",
                        help="Label mapping, `from to` per line (e.g. TIMIT's 48 -> 39 "
                             "folding), applied to references and hypotheses before "
                             "scoring."),
        "dev_ali": dict(decls=("--dev-ali",), type=TEXT_INPUT, default=None,
                        help="Dev alignment: every iteration is scored on it and the best "
                             "one is kept."),
        "patience": dict(decls=("--patience",), type=Count(0), default=0,
                         help="Stop once P dev scorings in a row have not beaten the best "
                              "one (needs a dev set); 0 runs every iteration."),
        "average": dict(decls=("--average/--no-average",), default=False,
                        help="Score and keep the running mean of the iterates instead of "
                             "the last iterate."),
        "update": dict(decls=("--update",), default=None,
                       help="How each iteration updates the model."),
        "history": dict(decls=("--history",), type=TEXT_OUTPUT, default=None,
                        help="Write the per-iteration log here (TSV, a row per iteration)."),
        "model": dict(decls=("--model",), type=HDF5_INPUT, default=None,
                      help="The model the statistics are accumulated under."),
        "floor": dict(decls=("--floor",), type=Real(0), default=None,
                      help="Pseudo-count of the estimates."),
        "emission_floor": dict(decls=("--emission-floor",), type=Real(0), default=None,
                               help="Interpolate every emission with eps p(x), p(x) the "
                                    "observation's training frequency."),
        "init": dict(decls=("--init",), is_flag=True, default=False,
                     help="Accumulate the initialisation's statistics (no model)."),
        "phones": dict(decls=("--phones",), type=TEXT_INPUT, default=None,
                       help="Symbol table of the phones to model (`phone id` lines).  "
                            "[default: the alignment's phones]"),
        "frame_shift": dict(decls=("--frame-shift",), type=Real(0, min_open=True), default=None,
                            help="Frame shift in milliseconds."),
        "segments": dict(decls=("--segments",), type=TEXT_INPUT, default=None,
                         help="Kaldi segments file `utt-id recording-id start end` "
                              "(seconds)."),
        "reco2file_and_channel": dict(
            decls=("--reco2file-and-channel",), type=TEXT_INPUT, default=None,
            help="Kaldi `recording-id file channel` list."),
        "phonemes": dict(decls=("--phonemes",), is_flag=True, default=False,
                         help="Score phoneme strings (G2P): silent letters dropped, compound "
                              "labels split; report PER and WER."),
        "letters": dict(decls=("--letters",), type=TEXT_INPUT, default=None, metavar="FILE",
                        help="With --phonemes: the utterances' spellings (`utt-id l e t t e r "
                             "s`); utterances spelled alike are one word, right when it "
                             "matches any of their references (PER against the closest)."),
        "window": dict(decls=("--window",), type=click.IntRange(0), default=3,
                       help="Letter window half-width of the features."),
        "ngram": dict(decls=("--ngram",), type=click.IntRange(1), default=3,
                      help="Longest letter n-gram feature inside the window."),
        "symbols": dict(decls=("--symbols",), type=TEXT_INPUT, default=None,
                        help="Symbol table (`symbol id` lines)."),
    }


def shared(name, **override):
    """A dataclass field for the shared option `name` (see `_shared_specs`), with this
    command family's default, type or help."""
    spec = {**_shared_specs()[name], **override}
    return option(*spec.pop("decls"), **spec)


def shared_option(name, dest=None, **override):
    """A click decorator for the shared option `name`, stored under `dest` (default: the
    option's own name), with this command's default, type or help."""
    spec = {**_shared_specs()[name], **override}
    decls = spec.pop("decls") + ((dest,) if dest else ())
    kw = {k: v for k, v in spec.items() if v is not None and v is not False}
    kw.setdefault("default", spec.get("default"))
    return click.option(*decls, show_default=True, **kw)
