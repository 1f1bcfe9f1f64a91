"""``fetch``: a Hugging Face Hub classifier into ``checkpoints/``, its safe files only.

Only what hierattn reads is downloaded (config.json, model.safetensors, tokenizer.json and the
tokenizer's small JSON files): never a pickled ``pytorch_model.bin`` and never a ``.py`` file, so a
repository's code is not even on the disk. The folder is downloaded beside its destination, opened
as the app opens a checkpoint (within its limits, with the library's own classes), and only then
renamed into place; a repository without ``model.safetensors`` is refused with the reason.
huggingface_hub does the download (transformers installs it): its resumable, authenticated,
revision-pinned transfers are nothing to write by hand.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ALLOWED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def add_fetch(commands) -> None:
    f = commands.add_parser("fetch", help="download a Hugging Face Hub classifier into checkpoints/ (its safe files "
                                          "only)")
    f.add_argument("repo", help="the Hub id, e.g. distilbert/distilbert-base-uncased-finetuned-sst-2-english")
    f.add_argument("--name", help="the checkpoint's name under checkpoints/ (default: the id's last part)")
    f.add_argument("--out", help="the folder to write instead")
    f.add_argument("--revision", help="a branch, tag or commit of the repository")
    f.set_defaults(func=fetch)


def fetch(args) -> int:
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.checkpoint.writing import refuse_to_replace, write_card
    from hierattn.home import checkpoint_root

    name = args.name or args.repo.rstrip("/").split("/")[-1]
    out = Path(args.out) if args.out else checkpoint_root() / name
    try:
        refuse_to_replace(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.fetch.", dir=out.parent))
        try:
            download(args.repo, staging, args.revision)
            load_classifier(staging, device="cpu")  # the checks the app makes, before it is listed
            write_card(staging)
            if out.exists():
                shutil.rmtree(out)
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except (CheckpointError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"saved {out}: it appears in the app's model lists")
    return 0


def download(repo: str, directory: Path, revision: str | None = None) -> None:
    """The repository's safe files into ``directory``; ValueError without model.safetensors, or
    when the Hub cannot be reached (the message says so)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo, revision=revision, local_dir=directory, allow_patterns=list(ALLOWED))
    except Exception as exc:  # noqa: BLE001  (offline, unknown repository, gated: the library's own types)
        raise ValueError(f"could not download {repo} from the Hugging Face Hub ({type(exc).__name__}: "
                         f"{str(exc)[:300]})") from None
    for stray in [p for p in directory.iterdir() if p.name not in ALLOWED]:  # the library's own cache folder
        shutil.rmtree(stray, ignore_errors=True) if stray.is_dir() else stray.unlink()
    if not (directory / "model.safetensors").is_file():
        raise ValueError(f"{repo} has no model.safetensors: hierattn never reads pickled weights "
                         "(convert them once where you trust the file, with save_pretrained(..., "
                         "safe_serialization=True))")
