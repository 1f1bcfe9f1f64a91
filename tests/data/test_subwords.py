"""A transformer reads the text through its own tokenizer (``data.subwords``): what the caps and an
erasure leave out is not read, and its window cuts as transformers' ``truncation=True`` cuts."""
from __future__ import annotations

import pytest

from hierattn.analysis.eraser import keeping
from hierattn.analysis.faithfulness import without
from hierattn.data.subwords import NO_WORD, SubwordVocab, read_text
from hierattn.data.text import TextConfig, tokenize
from tests.models.tiny_transformers import wordpiece


@pytest.fixture(scope="module")
def vocab():
    tokenizer, _ = wordpiece()
    return SubwordVocab(tokenizer, window=64, pad_id=0)


def _read(vocab, document) -> list[str]:
    return [t for t, _ in vocab.tokens(document)]


def test_an_untouched_document_is_read_whole_as_pasted():
    text = "The movie, I think, was GOOD!  Really.\nBad plot"
    document = tokenize(text)
    assert read_text(document)[0] == text


def test_an_erased_word_loses_its_pieces_and_the_space_after_it(vocab):
    document = tokenize("The movie was unbelievable! I loved the plot.")
    erased = without(document, {1, 3})  # "movie", "unbelievable"
    assert read_text(erased)[0] == "The was ! I loved the plot."
    tokens = _read(vocab, erased)
    assert "movie" not in tokens and "un" not in tokens and tokens.count("!") == 1
    # The was ! I loved the plot . -> words 0 1 (!, a word: kept by our rule) 2 3 4 5 (.) 6
    assert [w for _, w in vocab.tokens(erased)][1:-1] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert erased.num_tokens == 8 and NO_WORD not in [w for _, w in vocab.tokens(erased)]


def test_a_sentence_taken_out_goes_with_its_punctuation(vocab):
    document = tokenize("It is a film, a bad one. The plot was fun!")
    first_only = keeping(document, "sentence", {0})
    assert read_text(first_only)[0] == "It is a film, a bad one. "
    emptied = without(document, set(range(len(document.sentences[0].tokens))))  # every word of sentence 1
    assert read_text(emptied)[0] == "The plot was fun!"


def test_what_the_caps_cut_is_not_read():
    document = tokenize("One two three four, five. Six seven. Eight nine.", TextConfig(max_sentences=2, max_words=3))
    text = read_text(document)[0]
    assert "four" not in text and "five" not in text and "Eight" not in text
    assert text.startswith("One two three") and "Six seven." in text


def test_the_window_cuts_after_its_last_piece_as_transformers_truncation_does():
    from tokenizers import Tokenizer

    tokenizer, _ = wordpiece()
    text = "the movie was unbelievable and the plot was fun"
    vocab = SubwordVocab(Tokenizer.from_str(tokenizer.to_str()), window=7, pad_id=0)  # 5 pieces + [CLS] [SEP]
    document = tokenize(text)
    full = tokenizer.encode(text)
    assert vocab.pieces([document]).ids[0].tolist() == full.ids[:6] + [full.ids[-1]]  # cut mid-word, like HF
    cut = vocab.within_window(document)
    assert cut.num_tokens == 4 and cut.truncation.window_words_dropped == 5  # "unbelievable" partly read
    assert vocab.pieces([cut]).ids[0].tolist() == full.ids[:6] + [full.ids[-1]]
    erased = without(cut, {0})  # taking a word out lets in no text past the window
    assert "and" not in read_text(erased)[0]


def test_batches_of_a_model_that_reads_text_are_sorted_by_its_pieces(vocab):
    """A batch is padded to its longest sequence of pieces: sorted by them, a batch holds little padding
    (sorted by sentences, 41% of a fine-tuning epoch of tweets was padding)."""
    from hierattn.data.batches import bucketed_batches

    texts = ["the movie", "the movie was great and the plot was fun and the acting was good", "it is bad",
             "a film. it is great! i loved it. the story is fun and the actor is good", "boring", "the plot"] * 4
    documents = [tokenize(t) for t in texts]
    assert vocab.lengths(documents[:2]) == [4, 16]  # [CLS] the movie [SEP]; 14 words and the frame
    batches = bucketed_batches(documents, [0] * len(texts), vocab, 4, shuffle=True)
    read = sum(int(b.pieces.mask.sum()) for b in batches)
    assert read == sum(vocab.lengths(documents)) and read / sum(b.pieces.ids.numel() for b in batches) > 0.95
