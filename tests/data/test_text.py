
import pytest

from hierattn.data.text import TextConfig, Vocab, normalise, tokenize
from hierattn.limits import CHARACTERS


def test_spans_point_back_into_the_original_text():
    text = "  Hello, World!  I'm   HAPPY.\n\nNew para? Yes "
    doc = tokenize(text)
    for s in doc.sentences:
        for t in s.tokens:
            assert text[t.start: t.end] == t.text
        assert text[s.start: s.end].startswith(s.tokens[0].text)


def test_normalisation_follows_hcan_section_4_3():
    assert normalise("Hello,") == "hello"
    assert normalise("U.S.A!") == "u.s.a!"
    assert normalise("don't") == "dont"
    assert normalise("£600m") == "600m"
    assert normalise("—") == ""


def test_pure_punctuation_tokens_are_dropped_but_sentence_marks_kept():
    doc = tokenize('He said, "stop" !')
    norms = [t.norm for s in doc.sentences for t in s.tokens]
    assert norms == ["he", "said", "stop", "!"]


def test_sentences_split_on_punctuation_and_line_breaks():
    doc = tokenize("Headline without a stop\n\nFirst sentence. Second one! Third?")
    assert [[t.norm for t in s.tokens][0] for s in doc.sentences] == ["headline", "first", "second", "third"]


def test_caps_truncate_and_report():
    text = " ".join(f"Sentence {i} has some words here." for i in range(10))
    doc = tokenize(text, TextConfig(max_sentences=3, max_words=4))
    assert len(doc.sentences) == 3
    assert all(len(s.tokens) == 4 for s in doc.sentences)
    t = doc.truncation
    assert t.truncated and t.total_sentences == 10 and t.kept_sentences == 3
    assert t.words_dropped == 3 * (7 - 4)  # 6 words and "." per sentence
    assert "first 3 of 10 sentences" in t.message


def test_no_truncation_reported_when_within_caps():
    doc = tokenize("Short text. Really short.")
    assert not doc.truncation.truncated and doc.truncation.message == ""


def test_empty_whitespace_and_junk_give_no_sentences():
    assert tokenize("").sentences == []
    assert tokenize(" \n\t ").sentences == []
    assert tokenize("\x00\x01\x02 ,,, ---").sentences == []


@pytest.mark.slow
def test_huge_text_is_cut_at_max_chars_and_reported():
    doc = tokenize("word " * (CHARACTERS.value // 5 + 100), TextConfig(max_sentences=1, max_words=5))
    assert doc.truncation.chars_dropped == 500
    assert "characters were ignored" in doc.truncation.message and "HIERATTN_MAX_CHARS" in doc.truncation.message


def test_the_character_limit_is_a_setting(monkeypatch):
    monkeypatch.setenv("HIERATTN_MAX_CHARS", "30")
    doc = tokenize("Short words here. " * 10, TextConfig(max_sentences=20, max_words=5))
    assert doc.truncation.chars_dropped == 180 - 30 and "limit 30 characters" in doc.truncation.message


@pytest.mark.slow
def test_many_short_lines_are_read_in_linear_time():
    """A paste of 100,000 one-word lines took 347 s (each line break's sentence start made spaCy
    scan the whole document: quadratic), pinning a core long after its visitor left; it takes
    about 2 s now. Run in a process with a one-minute bound: a runaway, not a speed goal (that
    is in the bench)."""
    import subprocess
    import sys

    code = ("from hierattn.data.text import tokenize, TextConfig\n"
            "d = tokenize('w\\n' * 100_000, TextConfig(8, 50))\n"
            "print(d.truncation.total_sentences)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "100000", done.stderr[-1000:]


def test_line_breaks_still_end_sentences():
    doc = tokenize("a\n\nb\n c.\n\n\nd e f\n", TextConfig(max_sentences=10, max_words=10))
    assert [[t.text for t in s.tokens] for s in doc.sentences] == [["a"], ["b"], ["c."], ["d", "e", "f"]]


def test_vocab_build_save_load(tmp_path):
    docs = [tokenize("a a a b b c"), tokenize("a b d")]
    v = Vocab.build(docs, min_freq=2)
    assert v.itos == ["<pad>", "<unk>", "a", "b"]
    v.save(tmp_path / "vocab.json")
    w = Vocab.load(tmp_path / "vocab.json")
    assert w.itos == v.itos
    assert w.encode(docs[1].sentences[0]) == [2, 3, 1]
    assert len(Vocab.build(docs, min_freq=1, max_size=2)) == 4


def test_sentence_spans_keep_every_non_space_character():
    text = '"Quoted," she said — <b>bold</b>!\n\n  (Aside) ok.'
    doc = tokenize(text)
    covered = "".join(text[s.start: s.end] for s in doc.sentences)
    assert covered.replace(" ", "") == "".join(text.split())


def test_max_tokens_keeps_the_first_q_words_of_the_document():
    """HA-LSTM's input length q: the document's first q words, whatever the sentences, then the caps."""
    text = "One two three. Four five six seven. Eight nine."
    doc = tokenize(text, TextConfig(max_tokens=6))  # a full stop is a token too
    assert [t.norm for s in doc.sentences for t in s.tokens] == ["one", "two", "three", ".", "four", "five"]
    assert text[doc.sentences[-1].start: doc.sentences[-1].end] == "Four five"
    assert doc.truncation.kept_sentences == 2 and doc.truncation.total_sentences == 3
    assert doc.truncation.words_dropped == 3 and doc.truncation.truncated  # six, seven, "."
    assert tokenize(text, TextConfig(max_tokens=100)).truncation.truncated is False
    capped = tokenize(text, TextConfig(max_tokens=7, max_words=2))  # q first, then two words a sentence
    assert [[t.norm for t in s.tokens] for s in capped.sentences] == [["one", "two"], ["four", "five"]]


@pytest.mark.parametrize("config", [TextConfig(), TextConfig(letters="ascii"), TextConfig(lowercase=False)],
                         ids=["unicode", "ascii", "cased"])
def test_sentences_read_from_spacys_arrays_are_the_token_by_token_ones(config):
    """Text with no Chinese or Japanese is read from spaCy's arrays (``_plain_sentences``); the
    sentences, tokens and spans are those of the token-by-token reading, over both built-in
    corpora's first texts and the edge cases of spaces, line breaks and quotes."""
    from hierattn.data.builtin import load_builtin
    from hierattn.data.spacy_pipeline import pipeline
    from hierattn.data.text import _clean, _plain_sentences, _split_sentences

    texts = load_builtin("bbc-news").texts[:150] + load_builtin("tweets").texts[:300] + [
        "", " ", "\n", "a\n\nb\n", "\n\nA.\n\n b", "Hello  world .  Yes!\nNo", "“Quoted.” he said.  ",
        "  lead. Trail  \n", "Café crème, naïve résumé!! ... ?!", "(!!!) —", "Ünïcödé: Ελληνικά и кириллица. ok"]
    read = [(cleaned, pipeline()(cleaned)) for cleaned in map(_clean, texts)]
    assert [doc.text for _, doc in read] == [cleaned for cleaned, _ in read]  # what lets the text be passed in
    differ = [cleaned for cleaned, doc in read
              if _plain_sentences(doc, config, cleaned) != _split_sentences(doc, config)]
    assert not differ, differ[:3]
    assert sum(len(_plain_sentences(doc, config, cleaned)) for cleaned, doc in read) > 1000  # they were read
