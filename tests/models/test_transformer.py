"""Hugging Face classifiers: three families saved with ``save_pretrained`` open as
checkpoints, predict exactly as transformers does, and their attention reaches every level by the
documented rule; nothing in a folder runs."""
from __future__ import annotations

import json

import pytest
import torch

from hierattn.analysis.attribution import gradient_times_input
from hierattn.analysis.battery import document_battery
from hierattn.analysis.explain import explain
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import card
from hierattn.contract import Pieces
from hierattn.models.intervention import attention_override
from hierattn.models.subword_maps import aggregate, maps
from tests.models.tiny_transformers import (
    FAMILIES,
    LABELS,
    RAW_TEXTS,
    TEXTS,
    reference_probabilities,
    save_tiny,
)


@pytest.fixture(scope="module", params=FAMILIES)
def folder(request, tmp_path_factory):
    return save_tiny(request.param, tmp_path_factory.mktemp(request.param) / f"tiny-{request.param}")


@pytest.fixture(scope="module")
def classifier(folder):
    return load_classifier(folder, device="cpu")


def _words(ex):
    return [t.text for s in ex.document.sentences for t in s.tokens]


def test_a_folder_opens_with_its_labels_and_tokenizer_and_predicts_as_transformers_does(folder, classifier):
    """The raw text through the folder's own tokenizer, punctuation, capitals and entities as pasted:
    the probabilities plain transformers gives, and every piece it reads, in its order."""
    from transformers import AutoTokenizer

    assert classifier.model_type == "transformer" and classifier.labels == LABELS
    tokenizer = AutoTokenizer.from_pretrained(folder)
    for text in TEXTS + RAW_TEXTS:
        ex = explain(classifier, text)
        torch.testing.assert_close(torch.tensor(ex.probabilities), reference_probabilities(folder, text), atol=1e-5,
                                   rtol=0)
        assert [t for t, _ in ex.subwords] == tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])


def test_each_piece_belongs_to_the_word_its_characters_are_in(folder, classifier):
    """A piece's word is the one holding its first non-space character (the tokenizer's own offsets);
    a piece in no word (the comma, "&", ";") is read and belongs to none (-2); special tokens -1."""
    from transformers import AutoTokenizer

    text = RAW_TEXTS[0]
    ex = explain(classifier, text)
    words = [t for s in ex.document.sentences for t in s.tokens]
    offsets = AutoTokenizer.from_pretrained(folder)(text, return_offsets_mapping=True)["offset_mapping"]
    owners = [w for _, w in ex.subwords]
    assert len(offsets) == len(owners) and owners[0] == owners[-1] == -1
    for (a, b), w in list(zip(offsets, owners))[1:-1]:
        first = next((i for i in range(a, b) if not text[i].isspace()), a)
        inside = [i for i, t in enumerate(words) if t.start <= first < t.end]
        assert ([w] if w >= 0 else []) == inside and w in (-2, *inside), (text[a:b], w)
    assert any(w == -2 and text[a:b].strip() == "," for (a, b), w in zip(offsets, owners))


def test_each_family_frames_its_tokens_as_its_tokenizer_does(folder, classifier):
    ex = explain(classifier, TEXTS[0])
    first, last = ex.subwords[0][0], ex.subwords[-1][0]
    assert (first, last) == (("<s>", "</s>") if "roberta" in folder.name else ("[CLS]", "[SEP]"))
    assert ex.subwords[0][1] == -1 and ex.subwords[-1][1] == -1
    words = [w for _, w in ex.subwords if w >= 0]
    assert words == sorted(words) and set(words) == set(range(ex.word_count()))  # every word read, in order
    assert ex.attentions["subword.self"].weights.shape[-1] == len(ex.subwords)


def test_a_word_split_in_three_pieces_by_hand():
    """Tokens [CLS] a un ##believ ##able [SEP]: words 0 = "a", 1 = "un ##believ ##able". Attention
    to a word sums its pieces; attention from it averages its pieces' rows; special tokens are left
    out and each row renormalised."""
    rows = torch.tensor([
        [0.50, 0.10, 0.10, 0.10, 0.10, 0.10],  # [CLS]
        [0.20, 0.20, 0.20, 0.10, 0.10, 0.20],  # a
        [0.00, 0.40, 0.30, 0.20, 0.10, 0.00],  # un
        [0.10, 0.10, 0.20, 0.40, 0.10, 0.10],  # ##believ
        [0.30, 0.30, 0.10, 0.10, 0.00, 0.20],  # ##able
        [0.20, 0.20, 0.20, 0.20, 0.10, 0.10],  # [SEP]
    ]).view(1, 1, 1, 6, 6)
    word = torch.tensor([[-1, 0, 1, 1, 1, -1]])
    member = (word.unsqueeze(-1) == torch.arange(2)).float()
    grid = aggregate(rows, member)[0, 0, 0]
    # "a": to itself 0.2, to the three pieces 0.4, specials 0.4 left out -> 0.2/0.6, 0.4/0.6
    # "un..": mean of its rows over keys [a, pieces] = ([0.4, 0.6] + [0.1, 0.7] + [0.3, 0.2]) / 3 = [0.8/3, 1.5/3],
    # of 2.3/3 -> [0.8/2.3, 1.5/2.3]
    expected = torch.tensor([[0.2 / 0.6, 0.4 / 0.6], [0.8 / 2.3, 1.5 / 2.3]])
    torch.testing.assert_close(grid, expected)
    first = aggregate(rows[:, :, :, 0, :], member, queries=False)[0, 0, 0]  # [CLS] row: 0.1 and 0.3 of 0.4
    torch.testing.assert_close(first, torch.tensor([0.25, 0.75]))


def test_word_and_sentence_maps_are_distributions_over_the_document(classifier):
    ex = explain(classifier, TEXTS[2])
    sentences, words = len(ex.document.sentences), ex.word_count()
    for name, a in ex.attentions.items():
        real = a.mask.any(-1)
        torch.testing.assert_close(a.weights.sum(-1)[real], torch.ones(int(real.sum())), msg=name)
        assert (a.weights[~a.mask] == 0).all()
        size = {"word": words, "sentence": sentences, "subword": len(ex.subwords)}[a.level]
        assert a.weights.shape[-1] == size, name
    assert len(ex.target_attention("word")) == sentences
    assert [len(s) for s in ex.target_attention("word")] == ex.sentence_lengths
    assert sum(ex.target_attention("sentence")) == pytest.approx(1.0)


def test_the_word_maps_follow_from_the_token_maps(classifier):
    """``maps`` on a batch of two documents equals each alone (padding takes no weight)."""
    from hierattn.data.batches import encode_documents
    from hierattn.data.text import tokenize

    docs = [classifier.vocab.within_window(tokenize(t, classifier.text_config)) for t in TEXTS[:2]]
    with torch.no_grad():
        both = classifier.model(encode_documents(docs, classifier.vocab))
        alone = classifier.model(encode_documents(docs[1:], classifier.vocab))
    for name, a in alone.attentions.items():
        crop = tuple(slice(0, n) for n in a.weights.shape[1:])
        torch.testing.assert_close(both.attentions[name].weights[1][crop], a.weights[0], atol=1e-5, rtol=0, msg=name)


def test_interventions_act_on_every_layers_token_attention(classifier):
    from hierattn.analysis import attention_tests as tests

    ex = explain(classifier, TEXTS[0])
    assert tests.level_sites(ex.attentions, "word") == ["subword.self"]
    assert tests.reachable(classifier, ex.document, ["subword.self"]) == ["subword.self"]
    calls = []

    def even(site, weights, mask):
        calls.append(weights.shape)
        return tests.even_spread(weights, mask)

    reference = torch.tensor(ex.probabilities)
    with attention_override(even, in_order=False):
        changed = tests.output_distributions(classifier, [ex.document])[0]
    assert len(calls) == classifier.model.config.layers
    assert float(tests.tvd(changed, reference)) > 1e-3


def test_the_battery_runs_with_every_test_beside_its_baseline(classifier):
    ex = explain(classifier, TEXTS[2])
    battery = document_battery(classifier, ex, permutations=5)
    assert "word" in battery.permutation and "word" in battery.uniform
    assert "sentence" not in battery.permutation  # one site, tested once
    assert any("summed from subword.self" in n for n in battery.not_applicable)
    found = gradient_times_input(classifier, ex.document, 0)
    assert found is not None and len(found.scores) == ex.word_count() and max(found.scores) > 0


def test_a_long_document_is_read_in_the_window_and_says_what_was_cut(classifier):
    text = " ".join(["the movie was great ."] * 40)  # 200 words, a window of 64 tokens
    ex = explain(classifier, text)
    assert len(ex.subwords) <= classifier.vocab.window == 64
    assert ex.document.truncation.window_words_dropped == 200 - ex.word_count() > 0
    assert "subword tokens" in ex.document.truncation.message
    assert ex.document.unread()  # the cut text is greyed as unread


def _config(folder):
    return json.loads((folder / "config.json").read_text())


def test_code_a_folder_names_never_runs(tmp_path):
    """auto_map names a modeling file that would leave a mark if imported: a known model type is
    read with the library's class, an unknown one is refused; neither runs the file."""
    mark = tmp_path / "ran"
    code = f"open({str(mark)!r}, 'w').write('ran')\n"
    known = save_tiny("bert", tmp_path / "known")
    (known / "modeling_evil.py").write_text(code)
    (known / "configuration_evil.py").write_text(code)
    config = _config(known)
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig",
                          "AutoModelForSequenceClassification": "modeling_evil.EvilModel"}
    (known / "config.json").write_text(json.dumps(config))
    classifier = load_classifier(known, device="cpu")
    assert type(classifier.model.encoder).__module__.startswith("transformers.models.bert")
    assert "names code of its own (auto_map); it was never run" in card(known)
    unknown = save_tiny("bert", tmp_path / "unknown")
    (unknown / "modeling_evil.py").write_text(code)
    config = {**_config(unknown), "model_type": "evil", "auto_map": config["auto_map"]}
    (unknown / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="not one the transformers library defines.*never runs"):
        load_classifier(unknown, device="cpu")
    assert not mark.exists()


def test_pickled_weights_are_refused_with_the_conversion(tmp_path):
    folder = save_tiny("distilbert", tmp_path / "pickled")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="pytorch_model.bin, a pickle.*safe_serialization=True"):
        load_classifier(folder, device="cpu")


def test_a_folder_without_a_fast_tokenizer_is_refused(tmp_path):
    folder = save_tiny("bert", tmp_path / "slow")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match="tokenizer.json is missing"):
        load_classifier(folder, device="cpu")


def test_maps_of_a_constructed_batch_have_the_documented_axes():
    weights = torch.softmax(torch.randn(1, 3, 2, 5, 5), -1)
    pieces = Pieces(torch.arange(5).view(1, 5), torch.ones(1, 5, dtype=torch.bool), torch.tensor([[-1, 0, 1, 1, -1]]))
    word_mask = torch.tensor([[[True, False], [True, False]]])  # two sentences of one word each
    out = maps(weights, pieces, word_mask)
    assert out["subword.self"].axes == ("batch", "layer", "head", "query", "key")
    assert out["word.self"].weights.shape == (1, 3, 2, 2, 2)
    assert out["sentence.first_token"].weights.shape == (1, 2, 2)
    assert all(a.source == "subword.self" for n, a in out.items() if n != "subword.self")


def _within_window(classifier, texts):
    from hierattn.data.text import tokenize

    return [classifier.vocab.within_window(tokenize(t, classifier.text_config)) for t in texts]


def test_a_folder_model_keeps_the_registry_contract(classifier):
    """The contract every registered model keeps (tests/models/test_models.py), on the folder's own
    model reading its own tokenizer's pieces."""
    from tests.conftest import CORPUS
    from tests.models import test_models as contract

    docs = _within_window(classifier, CORPUS) + _within_window(classifier, ["Short one."])
    model, vocab = classifier.model, classifier.vocab
    original = contract.DOCS
    contract.DOCS = docs
    try:
        for check in (contract.test_output_contract, contract.test_padding_invariance,
                      contract.test_dropout_is_off_in_eval, contract.test_empty_sentence_rows_do_not_produce_nan,
                      contract.test_attention_sites_take_an_override):
            check((model, vocab))
    finally:
        contract.DOCS = original


def test_the_command_line_and_the_notebook_read_a_folder(folder, classifier, tmp_path, capsys):
    from hierattn import notebook
    from hierattn.cli import main

    assert main(["explain", "--checkpoint", str(folder), "--text", TEXTS[0]]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["subwords"][0]["word"] == -1 and "subword.self" in explained["attention"]
    assert main(["stats", "--checkpoint", str(folder), "--dataset", "tweets", "--documents", "6"]) == 0
    printed = capsys.readouterr().out
    assert "every head over 6 documents" in printed and "layer 2 head 2" in printed
    assert "every layer over 6 documents (Clark et al. 2019)" in printed and "to other specials" in printed
    out = tmp_path / "faithfulness.json"
    assert main(["faithfulness", "--checkpoint", str(folder), "--dataset", "tweets", "--documents", "4",
                 "--permutations", "5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert any(r["test"].startswith("comprehensiveness") for r in report["rows"])
    assert main(["evaluate", "--dataset", "tweets", "--checkpoints", str(folder)]) == 0
    assert f"`{folder.name}`" in capsys.readouterr().out
    ex = notebook.explain(classifier, TEXTS[1])
    assert notebook.heatmaps(ex, "subword.self", layer=0)[0].layout.title.text.startswith("subword.self · layer 1")
    figure, table = notebook.heads(ex)
    assert len(table) == 2 * 2 and figure is not None
    assert "subword" in set(notebook.metrics(ex)["level"])


def test_compare_sets_a_transformer_beside_han(classifier, checkpoint_dir):
    from hierattn import notebook
    from hierattn.analysis import compare

    han = load_classifier(checkpoint_dir / "tiny-han")
    comparison = notebook.compare(han, classifier, TEXTS[2])
    assert comparison.agreement is not None and len(comparison.table) >= 1
    ex = comparison.b
    start = ex.document.sentences[1].start
    matrix, spans = compare.sentence_self_attention(ex, "word.self", start, None)
    assert matrix.shape == (len(spans), len(spans)) == (len(ex.document.sentences[1].tokens),) * 2
    word = spans[0]
    rows = compare.word_self_attention(ex, start, word, layer=0)
    assert len(rows) == 2 and all(len(r["weights"]) == len(spans) for r in rows)  # one line per head


def test_a_folder_over_the_limits_is_refused_before_its_weights_are_read(folder, monkeypatch):
    from hierattn.checkpoint import reading

    monkeypatch.setenv("HIERATTN_MAX_PARAMETERS", "1000")
    monkeypatch.setattr(reading, "safe_open", lambda *a: pytest.fail("the weights were read"))
    with pytest.raises(CheckpointError, match="parameters and buffers is .* over the limit of 1,000"):
        load_classifier(folder, device="cpu")
    monkeypatch.delenv("HIERATTN_MAX_PARAMETERS")
    monkeypatch.setenv("HIERATTN_MAX_VOCAB_MB", "0.001")
    with pytest.raises(CheckpointError, match="tokenizer.json's size"):
        load_classifier(folder, device="cpu")


def _clark_by_hand(token: torch.Tensor, word: list[int], units: int) -> torch.Tensor:
    """Clark et al.'s rule with loops: a unit's received attention is the sum over its pieces, its
    own the mean over its pieces, special tokens left out and each row renormalised. token: (T, T)."""
    out = torch.zeros(units, units, dtype=torch.float64)
    for q in range(units):
        rows = [i for i, w in enumerate(word) if w == q]
        for k in range(units):
            keys = [j for j, w in enumerate(word) if w == k]
            out[q, k] = sum(float(token[i, j]) for i in rows for j in keys) / len(rows)
    return out / out.sum(-1, keepdim=True)


def test_word_maps_are_computed_when_read_and_a_layer_alone_when_a_layer_is_read(classifier):
    from hierattn.contract import DerivedMap

    ex = explain(classifier, TEXTS[2])
    assert isinstance(ex.describe("word.self"), DerivedMap) and isinstance(ex.describe("sentence.self"), DerivedMap)
    before = ex.nbytes
    layer = ex.layers("word.self") - 1
    rows = ex.metrics_of("word.self", layer)
    one = ex.self_attention("word.self", layer, 0)
    assert isinstance(ex.describe("word.self"), DerivedMap)  # the whole map was never computed
    assert {r["layer"] for r in rows} == {layer} and len(rows) == ex.heads("word.self")
    assert ex.nbytes > before  # the layer read is kept (a page rerun reads it again), and counted
    token = ex.attentions["subword.self"].weights[0, layer, 0]
    word = [w for _, w in ex.subwords]
    torch.testing.assert_close(one.double(), _clark_by_hand(token, word, ex.word_count()), atol=1e-6, rtol=0)
    whole = ex.attentions["word.self"].weights  # read whole: the same numbers
    torch.testing.assert_close(whole[0, layer, 0, : ex.word_count(), : ex.word_count()], one)
    every = [r for r in ex.metrics if r["map"] == "word.self" and r["layer"] == layer]
    assert every == rows


def test_the_command_line_writes_the_maps_asked_for(classifier, folder, capsys):
    from hierattn.cli import main

    assert main(["explain", "--checkpoint", str(folder), "--text", TEXTS[2]]) == 0  # the summary
    summary = json.loads(capsys.readouterr().out)["attention"]
    assert all("weights" not in summary[n] for n in ("subword.self", "word.self", "sentence.self"))
    assert "weights" in summary["word.first_token"]  # what the text is painted with
    ex = explain(classifier, TEXTS[2])
    layers, heads = ex.layers("word.self"), ex.heads("word.self")
    assert summary["word.self"]["shape"] == [1, layers, heads, ex.word_count(), ex.word_count()]
    assert summary["subword.self"]["shape"] == [1, layers, heads, len(ex.subwords), len(ex.subwords)]
    assert main(["explain", "--checkpoint", str(folder), "--text", TEXTS[2], "--maps", "word.self"]) == 0
    asked = json.loads(capsys.readouterr().out)["attention"]
    assert "weights" in asked["word.self"] and "weights" not in asked["subword.self"]
    assert torch.tensor(asked["word.self"]["weights"]).shape == (1, layers, heads, ex.word_count(), ex.word_count())
    assert main(["explain", "--checkpoint", str(folder), "--text", TEXTS[2], "--maps", "word.slef"]) == 2
    assert "no map named word.slef" in capsys.readouterr().err


def test_each_layers_map_is_transformers_own_attention_with_or_without_a_gradient(folder, classifier):
    """Without a gradient each layer's map is written into one stack as it is computed (``LayerStack``:
    transformers' list and a copy of it held every layer twice); with one, transformers' list is
    stacked so the gradient reaches the weights. Both are the library's eager attention, layer by layer."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from hierattn.data.batches import encode_documents
    from hierattn.data.text import tokenize

    text = RAW_TEXTS[0] + " " + TEXTS[0]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    reference = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        expected = torch.stack(reference(**tokenizer(text, return_tensors="pt"), output_attentions=True).attentions, 1)
    stacked = explain(classifier, text).attentions["subword.self"].weights  # (1, L, H, T, T)
    assert stacked.shape == expected.shape and expected.shape[1] > 1
    torch.testing.assert_close(stacked, expected, atol=1e-6, rtol=0)
    batch = encode_documents([classifier.vocab.within_window(tokenize(text, classifier.text_config))], classifier.vocab)
    with torch.enable_grad():
        weights = classifier.model(batch).attentions["subword.self"].weights
    assert weights.requires_grad
    torch.testing.assert_close(weights.detach(), expected, atol=1e-6, rtol=0)


def test_a_layer_stack_refuses_a_pass_that_skipped_or_repeated_a_layer():
    from hierattn.models.subword_maps import keep_layer, layer_stack

    with layer_stack(2) as stack:
        keep_layer(torch.full((1, 3, 4, 4), 0.25))
    with pytest.raises(RuntimeError, match="1 of 2 layers"):
        stack.full()
    keep_layer(torch.zeros(1, 3, 4, 4))  # outside the block: kept nowhere
    assert stack.written == 1
    stack.keep(torch.full((1, 3, 4, 4), 0.5))
    assert stack.full()[0, :, 0, 0, 0].tolist() == [0.25, 0.5]
    with pytest.raises(RuntimeError, match="more than the model's 2 layers"):
        stack.keep(torch.zeros(1, 3, 4, 4))
