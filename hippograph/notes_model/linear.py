"""A multinomial logistic regression as numbers: trained with scikit-learn (`fit`, at training time only),
used with numpy (`LinearModel.probabilities`), saved to and read from one `.npz` file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class LinearModel:
    classes: list[str]
    mean: np.ndarray  # the features are centred and scaled as at training
    scale: np.ndarray
    coef: np.ndarray  # classes x features (one row when there are two classes: the second class's)
    intercept: np.ndarray

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Rows x classes."""
        z = ((np.atleast_2d(x) - self.mean) / self.scale) @ self.coef.T + self.intercept
        if len(self.classes) == 2:
            p = 1.0 / (1.0 + np.exp(-np.clip(z[:, 0], -50.0, 50.0)))
            return np.stack([1.0 - p, p], axis=1)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, x: np.ndarray) -> list[str]:
        return [self.classes[i] for i in self.probabilities(x).argmax(axis=1)]

    def save(self, path: Path) -> None:
        np.savez_compressed(path, classes=np.array(self.classes), mean=self.mean.astype(np.float32),
                            scale=self.scale.astype(np.float32), coef=self.coef.astype(np.float32),
                            intercept=self.intercept.astype(np.float32))

    @classmethod
    def load(cls, path: Path) -> LinearModel:
        with np.load(path, allow_pickle=False) as f:
            return cls([str(c) for c in f["classes"]], f["mean"], f["scale"], f["coef"], f["intercept"])


def fit(x: np.ndarray, y: list[str] | np.ndarray, c: float = 1.0, balanced: bool = False, raw: int = 0) -> LinearModel:
    """A model of `y` from `x` (deterministic: the same rows give the same numbers). Each feature is centred and
    scaled to unit variance but the last `raw` (words present or not): a rare word scaled up would cost the
    regularisation little and fit the few rows it is in."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:  # the server reads weights without it; training needs it
        raise ImportError("training the notes judgement needs scikit-learn: pip install 'hippograph[train]'") from exc

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    if raw:
        mean[-raw:], scale[-raw:] = 0.0, 1.0
    model = LogisticRegression(C=c, max_iter=1000, tol=1e-3, class_weight="balanced" if balanced else None)
    model.fit((x - mean) / scale, np.asarray(y))
    return LinearModel([str(k) for k in model.classes_], mean, scale, model.coef_, model.intercept_)
