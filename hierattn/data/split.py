"""The stratified train / validation / test split (HCAN section 4.3: 80/10/10) and a data set
tokenised and split for training."""
from __future__ import annotations

from dataclasses import dataclass

from hierattn.data.dataset import Dataset
from hierattn.data.text import Document, TextConfig, tokenize_many

SEED = 1234


TRAIN_SHARE = 0.8  # of a data set, the training split's (80/10/10, as HCAN §4.3)


def stratified_split(labels: list[int], seed: int = SEED, fractions=(TRAIN_SHARE, 0.1, 0.1)) -> dict[str, list[int]]:
    """Indices of a stratified train/validation/test split (HCAN section 4.3: 80/10/10).

    Exactly scikit-learn's ``train_test_split(..., stratify=..., random_state=seed)`` twice (80 /
    20, then the 20 halved), re-implemented in NumPy (``_stratified_shuffle_split``) because
    importing scikit-learn costs 1.5 s, on the path of the app's first page. A test checks the
    two agree on the built-in data sets and on random labels; anything scikit-learn would refuse
    goes to scikit-learn, for its error message."""
    idx = list(range(len(labels)))
    rest = fractions[1] + fractions[2]
    train_pos, hold_pos = _stratified_shuffle_split(labels, rest, seed)
    hold = [idx[i] for i in hold_pos]  # scikit-learn's order, which the second split depends on
    val_pos, test_pos = _stratified_shuffle_split([labels[i] for i in hold], fractions[2] / rest, seed)
    return {"train": sorted(idx[i] for i in train_pos), "validation": sorted(hold[i] for i in val_pos),
            "test": sorted(hold[i] for i in test_pos)}


def _stratified_shuffle_split(labels: list[int], test_fraction: float, seed: int):
    """(train positions, test positions) in the order ``StratifiedShuffleSplit`` yields them."""
    import math

    import numpy as np

    n = len(labels)
    n_test = math.ceil(test_fraction * n)
    n_train = n - n_test
    classes, y_indices, class_counts = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    if n == 0 or class_counts.min() < 2 or min(n_train, n_test) < len(classes):
        from sklearn.model_selection import train_test_split  # raises its own, clear error

        train, test = train_test_split(list(range(n)), test_size=test_fraction, stratify=labels, random_state=seed)
        return train, test
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = _approximate_mode(class_counts, n_train, rng)
    t_i = _approximate_mode(class_counts - n_i, n_test, rng)
    train, test = [], []
    for i in range(len(classes)):
        permuted = class_indices[i].take(rng.permutation(class_counts[i]), mode="clip")
        train.extend(permuted[: n_i[i]])
        test.extend(permuted[n_i[i]: n_i[i] + t_i[i]])
    return rng.permutation(train).tolist(), rng.permutation(test).tolist()


def _approximate_mode(class_counts, n_draws: int, rng):
    """scikit-learn's ``utils.extmath._approximate_mode``: draws per class, ties broken by ``rng``."""
    import numpy as np

    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


@dataclass
class PreparedData:
    dataset: Dataset
    split: dict[str, list[int]]
    documents: list[Document]

    def part(self, name: str) -> tuple[list[Document], list[int]]:
        idx = self.split[name]
        return [self.documents[i] for i in idx], [self.dataset.labels[i] for i in idx]


def prepare(dataset: Dataset, text_config: TextConfig, seed: int = SEED) -> PreparedData:
    return PreparedData(dataset, stratified_split(dataset.labels, seed), tokenize_many(dataset.texts, text_config))


def training_subset(data: PreparedData, at_most: int) -> PreparedData:
    """``data`` with at most ``at_most`` training documents: each class in its own proportion (largest
    remainders, every class at least one), evenly spaced through that class's training documents.
    No draw: every seed of a run trains on the same documents, so seeds differ only as the registry
    says (initialisation, batch order, dropout). Validation and test stay whole, so the accuracy
    compares with every other model's on the data set (a fine-tune on two cores starts on a subset)."""
    train = data.split["train"]
    if at_most <= 0 or at_most >= len(train):
        return data
    by_class: dict[int, list[int]] = {}
    for i in train:
        by_class.setdefault(data.dataset.labels[i], []).append(i)
    share = at_most / len(train)
    quota = {c: max(1, int(share * len(members))) for c, members in by_class.items()}
    for c in sorted(by_class, key=lambda c: -(share * len(by_class[c]) % 1))[: max(0, at_most - sum(quota.values()))]:
        quota[c] = min(quota[c] + 1, len(by_class[c]))
    kept = sorted(members[(k * len(members)) // quota[c]] for c, members in by_class.items() for k in range(quota[c]))
    return PreparedData(data.dataset, {**data.split, "train": kept}, data.documents)
