"""Options defined once: a dataclass per estimator or decoder whose fields carry their
command-line declaration.

The same class gives the library its defaults (construct it in Python) and the command
line its click options (`click_options`), so a default cannot differ between the two,
and a new trainer gets shared option groups (jobs, seeds, dev selection) by listing
their classes. Kaldi does the same with option structs that register themselves.

    @dataclasses.dataclass
    class EmOptions:
        m: int = option("-m", "--states", default=4, type=click.IntRange(1), help="...")

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


def click_options(*classes):
    """Decorator adding every field of `classes` as a click option, in field order."""

    def deco(func):
        for cls in reversed(classes):
            for f in reversed(dataclasses.fields(cls)):
                spec = dict(f.metadata.get("click") or {})
                if not spec:
                    continue
                decls = spec.pop("decls")
                kw = {k: v for k, v in spec.items() if v is not None and v is not False}
                func = click.option(*decls, f.name, default=f.default, show_default=True,
                                    **kw)(func)
        return func

    return deco


def take(cls, kwargs):
    """Build `cls` from the matching keys of a click kwargs dict, removing them from it."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{k: kwargs.pop(k) for k in names if k in kwargs})


def as_dict(opts):
    """The options as a plain dict (recorded in provenance and model info)."""
    return dataclasses.asdict(opts)
