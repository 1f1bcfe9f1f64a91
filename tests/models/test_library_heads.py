"""A base encoder opens with its attention and no prediction; a head never trained is not shown as
a prediction (``hierattn.models.library_heads``)."""
from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

from hierattn.analysis.explain import explain
from hierattn.checkpoint.reading import load_classifier
from hierattn.home import checkpoint_root
from tests.conftest import REPO, shown
from tests.models.tiny_transformers import wordpiece

TEXT = "The movie was great. I loved the plot, and the acting was not bad!"


def _config(**extra):
    from transformers import BertConfig

    tok, _ = wordpiece()
    return BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=64, initializer_range=0.3, **extra)


def _tokenizer(folder):
    from transformers import PreTrainedTokenizerFast

    tok, special = wordpiece()
    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(folder)


@pytest.fixture(scope="module")
def base_encoder(tmp_path_factory):
    """A BertModel as downloaded: the encoder and its pooler, no head."""
    from transformers import BertModel

    folder = tmp_path_factory.mktemp("base") / "tiny-bert-base"
    torch.manual_seed(0)
    BertModel(_config()).save_pretrained(folder)
    _tokenizer(folder)
    return folder


def test_a_base_encoder_opens_with_its_pretrained_attention_and_no_prediction(base_encoder):
    from transformers import BertModel

    classifier = load_classifier(base_encoder, device="cpu")
    assert classifier.model.untrained_head == "base encoder"
    reference = BertModel.from_pretrained(base_encoder)
    ours = classifier.model.encoder.bert.state_dict()
    assert all(torch.equal(ours[k], v) for k, v in reference.state_dict().items() if k in ours)  # its own weights
    ex = explain(classifier, TEXT)
    assert ex.self_attention_names  # the views that need no head


def test_a_head_saved_without_training_is_told_apart_from_a_trained_one(base_encoder, tmp_path):
    from transformers import AutoModelForSequenceClassification

    folder = tmp_path / "random-head"
    AutoModelForSequenceClassification.from_pretrained(base_encoder, num_labels=2).save_pretrained(folder)
    _tokenizer(folder)
    assert load_classifier(folder, device="cpu").model.untrained_head == "untrained head"
    for shipped in ("bbc-news-transformer", "tweets-transformer"):
        assert load_classifier(checkpoint_root() / shipped, device="cpu").model.untrained_head is None


def test_explore_shows_no_prediction_for_a_base_encoder_and_says_what_to_do(base_encoder, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "checkpoints"
    root.mkdir()
    shutil.copytree(base_encoder, root / "tiny-bert-base")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    at.text_area(key="document").input(TEXT).run()
    assert not at.exception
    said = " ".join(shown(i.value) for i in at.info)
    assert "is a base encoder" in said and "no prediction is shown" in said and "Start from" in said
    assert not [m for m in at.metric if m.label == "Prediction"]
    assert not [t for t in at.toggle if t.key in ("trust", "whatif", "faithfulness")]


def test_a_base_encoder_starts_a_fine_tuning_run_with_its_own_weights(base_encoder):
    from hierattn.training.in_memory import started_from

    model, vocab = started_from(str(base_encoder), "transformer", ["negative", "positive"])
    pretrained = load_classifier(base_encoder, device="cpu").model.encoder.bert.state_dict()
    assert all(torch.equal(model.encoder.bert.state_dict()[k], v) for k, v in pretrained.items())
    assert model.encoder.config.num_labels == 2 and len(vocab) > 0


def test_no_surface_shows_a_base_encoders_random_head_as_a_prediction(base_encoder, tmp_path, monkeypatch, capsys):
    """The command line's JSON (no label, no probabilities, a field saying why), the notebook's
    header, the HTML report, Compare and Evaluation: each says there is no prediction, and none
    names a label. A RobertaModel folder once printed "LABEL_1" at 0.498/0.502, different on every
    load; a trained model still shows its prediction everywhere."""
    import json
    import shutil

    from hierattn import notebook
    from hierattn.checkpoint.classifier import WITHHELD
    from hierattn.cli import main
    from hierattn.viz import export

    assert main(["explain", "--checkpoint", str(base_encoder), "--text", TEXT]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["label"] is None and said["probabilities"] is None
    assert said["prediction_withheld"] == WITHHELD["base encoder"]
    assert main(["evaluate", "--dataset", "tweets", "--checkpoints", str(base_encoder)]) == 2
    assert "is a base encoder" in capsys.readouterr().err
    classifier = load_classifier(base_encoder, device="cpu")
    ex = explain(classifier, TEXT)
    header = notebook._header(ex)
    assert "no prediction" in header and "LABEL_" not in header
    report = export.report_html(ex.classifier_name, dict(zip(ex.labels, ex.probabilities)), export.pd.DataFrame(),
                                {}, withheld=WITHHELD[ex.withheld]).decode()
    assert "No prediction" in report and "LABEL_" not in report
    trained = explain(load_classifier(checkpoint_root() / "tweets-transformer", device="cpu"), TEXT)
    assert trained.withheld is None and trained.to_dict()["label"] in ("negative", "neutral", "positive")
    assert "prediction <b>" in notebook._header(trained)

    root = tmp_path / "checkpoints"
    root.mkdir()
    shutil.copytree(base_encoder, root / "tiny-bert-base")
    shutil.copytree(checkpoint_root() / "tweets-transformer", root / "tweets-transformer")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    monkeypatch.setenv("HIERATTN_SHIPPED", "0")
    at = AppTest.from_file(str(REPO / "pages/compare.py"), default_timeout=120)
    at.session_state["compare_a"], at.session_state["compare_b"] = "tiny-bert-base", "tweets-transformer"
    at.query_params["a"], at.query_params["b"] = "tiny-bert-base", "tweets-transformer"
    at = at.run()
    at.text_area(key="compare_document").input(TEXT).run()
    assert not at.exception, at.exception
    infos = " ".join(shown(i.value) for i in at.info)
    assert "No prediction: `tiny-bert-base` is a base encoder" in infos
    assert [m.label for m in at.metric].count("Prediction") == 1  # B's, a trained model's
    at = AppTest.from_file(str(REPO / "pages/evaluation.py"), default_timeout=120)
    at.session_state["eval_model"] = "tiny-bert-base"
    at = at.run()
    assert not at.exception and "there is no prediction to score" in " ".join(shown(i.value) for i in at.info)
    assert not at.metric
