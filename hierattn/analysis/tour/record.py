"""The Tour's rates over the test splits, recorded: ``python -m hierattn tour`` computes them
(``rates``) and ``save`` writes them to results/tour.json with a digest of each checkpoint's
content; the Tour page reads them with ``load``, and says so when the file is missing or a
checkpoint's content changed since."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from hierattn.analysis.tour.rates import StepRate

CHECKPOINT_FILES = ("config.json", "model.safetensors", "vocab.json", "tokenizer.json")


def checkpoint_digest(folder: Path) -> str:
    """A digest of a checkpoint's content (its config, weights and vocabulary), the stamp its
    recorded rates carry: a fresh clone or a copy keeps it, where file times change on every checkout."""
    import hashlib

    digest = hashlib.sha256()
    for name in CHECKPOINT_FILES:
        path = Path(folder) / name
        if path.exists():
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def save(rates: dict[int, StepRate], stamps: dict[str, str], path: Path) -> None:
    """Write the rates with the digests of the checkpoints they were computed from."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"checkpoints": stamps, "steps": {str(k): asdict(v) for k, v in rates.items()}}
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)


def load(path: Path) -> tuple[dict[int, StepRate], dict[str, str]]:
    """The recorded rates and the checkpoint digests they were computed from ({} when none)."""
    try:
        payload = json.loads(path.read_text())
        steps = {int(k): StepRate(**v) for k, v in payload["steps"].items()}
        return steps, payload.get("checkpoints", {})
    except (OSError, ValueError, KeyError, TypeError):
        return {}, {}
