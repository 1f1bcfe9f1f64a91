"""Counterfactual edits: the edited text and where its changes are."""
import pytest

from hierattn.analysis.counterfactual import Edit, apply
from hierattn.data.text import tokenize

TEXT = "The film was great. The acting was not great!\nA great day, greatly."


def test_drop_reorder_and_replace():
    doc = tokenize(TEXT)
    edited = apply(doc, Edit([2, 0], [("great", "awful")]))
    assert edited.text == "A awful day, greatly. The film was awful."  # 'greatly' is another word
    assert [edited.text[a:b] for a, b in edited.replaced] == ["awful", "awful"]
    assert edited.sentence_of == [2, 0]


def test_no_edit_keeps_the_text_and_line_breaks():
    doc = tokenize(TEXT)
    assert apply(doc, Edit([0, 1, 2])).text == "The film was great. The acting was not great!\n\nA great day, greatly."


def test_replacements_happen_once_and_respect_word_boundaries():
    doc = tokenize("cat concat cat-like catalog. Dog and cat.")
    edited = apply(doc, Edit([0, 1], [("cat", "dog"), ("dog", "cat")]))  # a swap, not a round trip
    assert edited.text == "dog concat dog-like catalog. Dog and dog."
    assert len(edited.replaced) == 3


def test_describe_and_bad_orders():
    assert Edit([2, 0], [("a", "b")]).describe(3) == ["dropped S2", "new order S3 S1", "'a' → 'b'"]
    assert Edit([0, 1, 2]).describe(3) == []
    doc = tokenize(TEXT)
    with pytest.raises(ValueError):
        apply(doc, Edit([0, 0]))
    with pytest.raises(ValueError):
        apply(doc, Edit([5]))
