"""A labelled data set in memory, and the error every reader raises in user terms."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dataset:
    name: str
    texts: list[str]
    labels: list[int]
    label_names: list[str]
    decoded: int = 0  # texts whose HTML markup or entities were decoded when read (your own file)


class DataError(ValueError):
    """A data set could not be read; the message says why in user terms."""


def stratified_subset(dataset: Dataset, at_most: int, seed: int = 0) -> Dataset:
    """At most ``at_most`` documents of ``dataset``, each class in its own proportion (largest
    remainders; every class keeps at least one), drawn with ``seed``, in the data set's own order;
    the whole data set when it is no larger. Fine-tuning a pre-trained model on a subset first is how
    one tries it on two cores (30,526 tweets were 1-2.5 hours an epoch)."""
    import random

    if at_most >= len(dataset.texts):
        return dataset
    by_class: dict[int, list[int]] = {}
    for i, label in enumerate(dataset.labels):
        by_class.setdefault(label, []).append(i)
    share = at_most / len(dataset.texts)
    quota = {c: max(1, int(share * len(members))) for c, members in by_class.items()}
    spare = at_most - sum(quota.values())  # the largest remainders get the documents left
    for c in sorted(by_class, key=lambda c: -(share * len(by_class[c]) % 1)):
        if spare <= 0:
            break
        if quota[c] < len(by_class[c]):
            quota[c], spare = quota[c] + 1, spare - 1
    rng = random.Random(seed)
    kept = sorted(i for c, members in by_class.items() for i in rng.sample(members, quota[c]))
    return Dataset(dataset.name, [dataset.texts[i] for i in kept], [dataset.labels[i] for i in kept],
                   dataset.label_names, dataset.decoded)
