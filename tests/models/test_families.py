"""Eight families transformers knows, each built at random and saved as a practitioner's folder: each
opens and explains, matching plain transformers, or is refused at open with its family named, and
the same way in the command line, the notebook, Explore and ``train --start-from``. DeBERTa-v2 and
MPNet once opened and fine-tuned, then failed every explanation with "0 of 2 layers' attention
passed through subword.self" (their attention runs in their own modules)."""
from __future__ import annotations

import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

from hierattn.checkpoint.format import CheckpointError
from tests.conftest import REPO, shown
from tests.models.tiny_transformers import LABELS, reference_probabilities, wordpiece

TEXT = "The movie was great. I loved the plot, and the acting was not bad!"
REFUSED = {"deberta-v2": "DebertaV2", "mpnet": "MPNet"}  # model type -> the family the message names
SIZES = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, initializer_range=0.3)


def _config(family: str, vocab: int):
    import transformers as t

    labels = {"id2label": dict(enumerate(LABELS)), "label2id": {x: i for i, x in enumerate(LABELS)}}
    if family == "distilbert":
        return t.DistilBertConfig(vocab_size=vocab, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                  max_position_embeddings=64, initializer_range=0.3, **labels)
    built = {"albert": t.AlbertConfig, "electra": t.ElectraConfig, "deberta-v2": t.DebertaV2Config,
             "roberta": t.RobertaConfig, "xlm-roberta": t.XLMRobertaConfig, "mpnet": t.MPNetConfig,
             "modernbert": t.ModernBertConfig}[family]
    extra = {"embedding_size": 16} if family in ("albert", "electra") else {}
    positions = 66 if family in ("roberta", "xlm-roberta") else 64  # RoBERTa's positions start after the pad id
    return built(vocab_size=vocab, max_position_embeddings=positions, pad_token_id=0, **SIZES, **extra, **labels)


FAMILIES = ("distilbert", "albert", "electra", "deberta-v2", "roberta", "xlm-roberta", "mpnet", "modernbert")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Each family's random classifier of 3 labels, its head's biases set as training leaves them."""
    from transformers import AutoModelForSequenceClassification, PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp("families")
    out = {}
    for family in FAMILIES:
        tok, special = wordpiece()
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_config(_config(family, tok.get_vocab_size()))
        with torch.no_grad():  # transformers starts a new head's biases at exactly zero: "never trained"
            for name, p in model.named_parameters():
                if not name.startswith(model.base_model_prefix + ".") and name.endswith("bias"):
                    p.normal_(0, 0.1)
        folder = root / f"tiny-{family}"
        model.save_pretrained(folder)
        PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(folder)
        out[family] = folder
    return out


@pytest.mark.slow  # eight families built, each through four surfaces
def test_each_family_explains_or_is_refused_with_its_family_named_on_every_surface(folders, tmp_path, monkeypatch,
                                                                                   capsys):
    import shutil

    from hierattn import notebook
    from hierattn.analysis.explain import explain
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.cli import main
    from hierattn.training.in_memory import started_from

    root = tmp_path / "checkpoints"
    root.mkdir()
    for folder in folders.values():
        shutil.copytree(folder, root / folder.name)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    monkeypatch.setenv("HIERATTN_SHIPPED", "0")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    for family, folder in folders.items():
        code = main(["explain", "--checkpoint", str(folder), "--text", TEXT])
        out, err = capsys.readouterr()
        at.selectbox(key="model").set_value(folder.name).run()
        assert not at.exception, (family, at.exception)
        page = " ".join(shown(str(e.value)) for kind in ("error", "warning", "info") for e in getattr(at, kind))
        if family in REFUSED:
            said = f"model type '{family}' ({REFUSED[family]}) computes its attention in code of its own"
            assert code == 2 and said in err, (family, err)
            with pytest.raises(CheckpointError, match=rf"\({REFUSED[family]}\) computes its attention"):
                notebook.load(folder)
            with pytest.raises(CheckpointError, match=rf"\({REFUSED[family]}\) computes its attention"):
                started_from(str(folder), "transformer", ["a", "b"])
            assert said in page, (family, page)
            continue
        assert code == 0, (family, err)
        assert json.loads(out)["label"] in LABELS
        classifier = notebook.load(folder)
        ex = explain(classifier, TEXT)
        assert ex.self_attention_names, family
        assert torch.tensor(ex.probabilities) == pytest.approx(reference_probabilities(folder, TEXT), abs=1e-4)
        model, _ = started_from(str(folder), "transformer", ["a", "b"])
        assert model.encoder.config.num_labels == 2
        at.text_area(key="document").input(TEXT).run()
        assert not at.exception, (family, at.exception)
        assert [m for m in at.metric if m.label == "Prediction"], family
        assert load_classifier(folder, device="cpu").model.untrained_head is None
