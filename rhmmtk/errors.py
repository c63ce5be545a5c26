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
