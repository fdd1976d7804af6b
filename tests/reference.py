"""Float64 NumPy reference of the notes' formulas, written loop-by-loop for clarity."""

import numpy as np


def similarity(u, v, kind, temperature=1.0, concentration=None):
    u, v = np.asarray(u, "float64"), np.asarray(v, "float64")
    if kind == "cosine":
        return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v))) / temperature
    weights = np.ones_like(u) if concentration is None else np.asarray(concentration, "float64")
    return -0.5 * float(np.sum(weights * (u - v) ** 2)) / temperature


def info_nce(
    z1,
    z2,
    kind="euclidean",
    temperature=1.0,
    candidates="nt_xent",
    concentration=None,
    hard_negative_beta=0.0,
):
    """Mean loss over anchor rows; `concentration` gives -1/2 (u - v)^T Lambda (u - v)."""
    z1, z2 = np.asarray(z1, "float64"), np.asarray(z2, "float64")
    batch = len(z1)
    sim = lambda a, b: similarity(a, b, kind, temperature, concentration)  # noqa: E731
    losses = []
    if candidates == "one_directional":
        rows = [(z1[i], [z2[j] for j in range(batch)], i) for i in range(batch)]
    else:
        everything = np.concatenate([z1, z2])
        rows = []
        for i in range(2 * batch):
            others = [j for j in range(2 * batch) if j != i]
            positive = (i + batch) % (2 * batch)
            rows.append((everything[i], [everything[j] for j in others], others.index(positive)))
    for anchor, cands, positive in rows:
        logits = np.array([sim(anchor, c) for c in cands])
        negatives = np.array([k for k in range(len(cands)) if k != positive])
        weights = np.ones(len(cands))
        if hard_negative_beta:
            w = np.exp(hard_negative_beta * logits[negatives])
            weights[negatives] = len(negatives) * w / w.sum()
        losses.append(-logits[positive] + np.log(np.sum(weights * np.exp(logits))))
    return float(np.mean(losses))


def numerical_gradient(function, x, step=1e-6):
    """Central finite differences of a scalar function of an array, in float64."""
    x = np.asarray(x, "float64")
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += step
        minus[index] -= step
        gradient[index] = (function(plus) - function(minus)) / (2 * step)
    return gradient
