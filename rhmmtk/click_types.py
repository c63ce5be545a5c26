"""Validated option and argument types shared by every subcommand (and by anything that
builds options, e.g. a dataclass-based options layer: the types are plain click types,
and `check_value(type, value, name)` validates a value outside click).

Numbers: `Real(...)` is a float in an interval with open or closed ends that also
refuses NaN and infinities (click's FloatRange lets NaN through: every comparison with
NaN is false). `Count(...)` is an integer range. `SEED` a non-negative integer (numpy's
generators refuse negative seeds).

Paths: HDF5 files cannot be streamed (HDF5 needs to seek), so `HDF5_INPUT` and
`HDF5_OUTPUT` refuse `-`; `TEXT_INPUT` and `TEXT_OUTPUT` accept it (stdin, stdout);
`OUTPUT` is any other output (an image) and accepts `-` as well.
"""
import math

import click


class Real(click.FloatRange):
    """A finite float in [min, max], with `min_open` / `max_open` for open ends."""

    name = "float"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower().lstrip("+-") in (
                "nan", "inf", "infinity"):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        value = super().convert(value, param, ctx)
        if not math.isfinite(value):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return value

    def _describe_range(self):
        # click describes an interval with no ends as "x<=None" in --help and the man pages.
        if self.min is None and self.max is None:
            return "finite"
        return super()._describe_range()


class Count(click.IntRange):
    """An integer in [min, max] (either end may be None: unbounded)."""

    name = "integer"


SEED = Count(0)


class _PathType(click.Path):
    """A file path; `-` allowed only when the format can stream."""

    def __init__(self, stream, what):
        super().__init__(dir_okay=False, allow_dash=stream)
        self.stream = stream
        self.what = what

    def convert(self, value, param, ctx):
        from .io.specifiers import looks_like_specifier

        if looks_like_specifier(str(value)):     # never a file named `ark:-`
            self.fail(f"{value}: a Kaldi or HTK specifier is not accepted here; give "
                      f"{self.what} file name", param, ctx)
        if not self.stream and str(value) == "-":
            self.fail(f"{self.what} cannot be streamed ('-'): HDF5 needs to seek; give a file "
                      "name.", param, ctx)
        return super().convert(value, param, ctx)


HDF5_INPUT = _PathType(False, "an HDF5 input")
HDF5_OUTPUT = _PathType(False, "an HDF5 output")
TEXT_INPUT = _PathType(True, "a text input")
TEXT_OUTPUT = _PathType(True, "a text output")
OUTPUT = _PathType(True, "an output")


def check_value(type_, value, name):
    """Validate `value` with a click type outside a command line; raises InputError."""
    from .errors import InputError

    try:
        return type_.convert(value, None, None)
    except click.BadParameter as e:
        raise InputError(f"invalid {name}: {e.message}") from None
