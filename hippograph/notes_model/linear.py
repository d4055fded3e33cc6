"""A multinomial logistic regression, read straight from the features or from one layer of rectified units
over them, as numbers: trained with scikit-learn (`fit`, at training time only), used with numpy
(`LinearModel.probabilities`), saved to and read from one `.npz` file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class LinearModel:
    classes: list[str]
    mean: np.ndarray  # the features are centred and scaled as at training
    scale: np.ndarray
    coef: np.ndarray  # classes x inputs (one row when there are two classes: the second class's)
    intercept: np.ndarray
    hidden: np.ndarray | None = None  # features x units: the layer the regression reads, when there is one
    hidden_bias: np.ndarray | None = None

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Rows x classes."""
        h = (np.atleast_2d(x) - self.mean) / self.scale
        if self.hidden is not None and self.hidden_bias is not None:
            # most features are words a clause does not hold (0): the product over the others is the same sum,
            # small enough for one core (a multi-threaded product of a clause by the whole layer waited
            # milliseconds on a busy core)
            used = np.flatnonzero(h.any(axis=0))
            h = np.maximum(h[:, used] @ self.hidden[used] + self.hidden_bias, 0.0)
        z = h @ self.coef.T + self.intercept
        if len(self.classes) == 2:
            p = 1.0 / (1.0 + np.exp(-np.clip(z[:, 0], -50.0, 50.0)))
            return np.stack([1.0 - p, p], axis=1)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, x: np.ndarray) -> list[str]:
        return [self.classes[i] for i in self.probabilities(x).argmax(axis=1)]

    def save(self, path: Path) -> None:
        arrays: dict[str, np.ndarray] = {
            "classes": np.array(self.classes), "mean": self.mean.astype(np.float32),
            "scale": self.scale.astype(np.float32), "coef": self.coef.astype(np.float32),
            "intercept": self.intercept.astype(np.float32)}
        if self.hidden is not None and self.hidden_bias is not None:
            arrays |= {"hidden": self.hidden.astype(np.float32), "hidden_bias": self.hidden_bias.astype(np.float32)}
        np.savez_compressed(path, allow_pickle=False, **arrays)

    @classmethod
    def load(cls, path: Path) -> LinearModel:
        with np.load(path, allow_pickle=False) as f:
            layer = (f["hidden"], f["hidden_bias"]) if "hidden" in f.files else (None, None)
            return cls([str(c) for c in f["classes"]], f["mean"], f["scale"], f["coef"], f["intercept"], *layer)


def fit(x: np.ndarray, y: list[str] | np.ndarray, c: float = 1.0, balanced: bool = False, raw: int = 0,
        hidden: int = 0, alpha: float = 0.01) -> LinearModel:
    """A model of `y` from `x` (deterministic: the same rows give the same numbers). Each feature is centred and
    scaled to unit variance but the last `raw` (words present or not): a rare word scaled up would cost the
    regularisation little and fit the few rows it is in. With `hidden` units, the regression reads a layer of
    that many rectified units (scikit-learn's `MLPClassifier`, L2 penalty `alpha`, stopped early on a tenth of
    the rows kept aside; `c` and `balanced` are the plain regression's)."""
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.neural_network import MLPClassifier
    except ImportError as exc:  # the server reads weights without it; training needs it
        raise ImportError("training the notes judgement needs scikit-learn: pip install 'hippograph[train]'") from exc

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    if raw:
        mean[-raw:], scale[-raw:] = 0.0, 1.0
    scaled = (x - mean) / scale
    if hidden:
        net = MLPClassifier(hidden_layer_sizes=(hidden,), alpha=alpha, batch_size=256, max_iter=60,
                            early_stopping=True, n_iter_no_change=5, random_state=0)
        net.fit(scaled, np.asarray(y))
        return LinearModel([str(k) for k in net.classes_], mean, scale, net.coefs_[1].T.copy(), net.intercepts_[1],
                           net.coefs_[0], net.intercepts_[0])
    model = LogisticRegression(C=c, max_iter=1000, tol=1e-3, class_weight="balanced" if balanced else None)
    model.fit(scaled, np.asarray(y))
    return LinearModel([str(k) for k in model.classes_], mean, scale, model.coef_, model.intercept_)
