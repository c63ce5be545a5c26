"""User-facing errors.

Anything a user can cause (a bad file, a wrong option) raises InputError; the
command line turns it into one line on stderr and exit status 1, never a
traceback.
"""


class InputError(Exception):
    """A problem with what the user gave us: says which file, which utterance, what."""

    def __init__(self, problem, path=None, utt=None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.utt = utt
        super().__init__(self.describe())

    def describe(self):
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.utt is not None:
            where.append(f"utterance {self.utt}")
        return (": ".join(where) + ": " if where else "") + self.problem


class StdoutClosed(Exception):
    """Standard output's reader went away (`rhmmtk decode ... - | head`): not an error; the
    command stops, its other outputs are not written, and it exits 141 (128 + SIGPIPE).
    Not an OSError, so click's own handler of EPIPE (exit 1) does not take it."""
