"""R-HMM parameters <pi, o, t, f> (section 3.2): what EM estimates and what the
synthetic generator samples from.

Arrays (m hidden states for every label; labels observed):
  pi[a, h]        pi(a, h)
  o[a, x, h]      o(x | a, h)
  t[a, b, h2, h]  t(b, h2 | a, h)   (the paper's T^{b|a}[h2, h])
  f[a, h]         f(* | a, h)
For every (a, h): sum_{b, h2} t[a, b, h2, h] + f[a, h] = 1, and sum_x o[a, x, h] = 1.
"""
import numpy as np

from .operators import Operators
from ...symbols import SymbolTable


class RHMM:
    def __init__(self, pi, o, t, f, backoff=None):
        """backoff: None or (eps, p(x)), the emission backoff its operators are decoded
        with (operators.py); the parameters themselves stay EM's."""
        self.pi, self.o, self.t, self.f = (np.asarray(v, dtype=np.float64) for v in (pi, o, t, f))
        self.backoff = backoff

    @property
    def shape(self):
        """(l, m, n)"""
        l, n, m = self.o.shape
        return l, m, n

    def operators(self, labels=None, observations=None, info=None):
        """Proposition 4.1: C^{b|a}(v) = T^{b|a} diag(v), C^{*|a}(v) = f^a diag(v),
        c^1_a = pi^a, c^a_x = o^a_x. Label pairs with T^{b|a} = 0 are left out."""
        l, m, n = self.shape
        labels = labels or SymbolTable([f"a{i}" for i in range(l)])
        observations = observations or SymbolTable([f"x{i}" for i in range(n)])
        trans = {(a, b): self.t[a, b] for a in range(l) for b in range(l)
                 if np.any(self.t[a, b] != 0)}
        return Operators(labels, observations, "diagonal", list(self.pi), list(self.o),
                         trans, list(self.f), info, self.backoff)

    @classmethod
    def from_operators(cls, op):
        """The parameters of diagonal-form operators with one m for every label (what
        RHMM.operators writes: EM and HMM models). ValueError otherwise."""
        if op.form != "diagonal" or len(set(op.m.tolist())) != 1:
            raise ValueError("not the operators of an EM model (diagonal form, one m per label)")
        l, m = op.num_labels, int(op.m[0])
        t = np.zeros((l, l, m, m))
        for (a, b), T in op.trans.items():
            t[a, b] = T
        return cls(np.stack(op.init), np.stack(op.emit), t, np.stack(op.stop), op.backoff)

    def fingerprint(self):
        """A short hash of the parameters (statistics record the model they were made with)."""
        import hashlib

        h = hashlib.sha1()
        for v in (self.pi, self.o, self.t, self.f):
            h.update(np.ascontiguousarray(v, dtype="<f8").tobytes())
        return h.hexdigest()[:16]

    def sample(self, count, rng, max_len=10_000):
        """Draw `count` full sequences; returns lists of (labels, observations, hidden)."""
        l, m, n = self.shape
        first = self.pi.ravel() / self.pi.sum()
        # next-state table per (a, h): l*m transitions then stop
        nxt = np.concatenate([self.t.transpose(0, 3, 1, 2).reshape(l, m, l * m),
                              self.f[:, :, None]], axis=2)
        cum_next = np.cumsum(nxt, axis=2)
        cum_emit = np.cumsum(self.o.transpose(0, 2, 1), axis=2)  # (l, m, n)
        out = []
        for _ in range(count):
            s = rng.choice(l * m, p=first)
            a, h = divmod(int(s), m)
            A, H, X = [], [], []
            while True:
                A.append(a)
                H.append(h)
                X.append(int(np.searchsorted(cum_emit[a, h], rng.random() * cum_emit[a, h, -1],
                                             side="right")))
                k = int(np.searchsorted(cum_next[a, h], rng.random() * cum_next[a, h, -1],
                                        side="right"))
                if k >= l * m or len(A) >= max_len:
                    break
                a, h = divmod(k, m)
            out.append((np.array(A), np.array(X), np.array(H)))
        return out

    def loglik(self, labels, obs):
        """log p(a, x) of one skeletal sequence (sum over hidden states)."""
        v = self.pi[labels[0]] * self.o[labels[0], obs[0]]
        ll = 0.0
        for i in range(1, len(labels)):
            v = (self.t[labels[i - 1], labels[i]] @ v) * self.o[labels[i], obs[i]]
            s = v.sum()
            ll += np.log(s)
            v /= s
        return ll + np.log(v @ self.f[labels[-1]])


def random_rhmm(l, m, n, rng, stop=0.1, sparsity=0.0, concentration=1.0):
    """A random R-HMM. `stop` is f(*|a,h) on average; `sparsity` zeroes that share of
    label bigrams; emissions are Dirichlet(concentration) draws per (a, h)."""
    pi = rng.dirichlet(np.ones(l * m)).reshape(l, m)
    o = rng.dirichlet(np.full(n, concentration), size=(l, m)).transpose(0, 2, 1)
    t = rng.dirichlet(np.ones(l * m), size=(l, m))  # (a, h, b*m + h2)
    t = t.reshape(l, m, l, m).transpose(0, 2, 3, 1)  # (a, b, h2, h)
    if sparsity > 0:
        keep = rng.random((l, l)) >= sparsity
        keep[np.arange(l), rng.integers(0, l, size=l)] = True
        t = t * keep[:, :, None, None]
        t = t / t.sum(axis=(1, 2), keepdims=True)
    f = np.clip(rng.normal(stop, stop / 4, size=(l, m)), stop / 4, 0.9)
    t = t * (1 - f)[:, None, None, :]
    return RHMM(pi, o, t, f)
