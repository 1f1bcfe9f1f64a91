"""Text pipeline: sentences and tokens with their character spans, normalisation, vocabulary.

Normalisation follows HCAN (Gao et al. 2018) section 4.3: lowercase, and drop every character
that is not alphanumeric except ``.``, ``!`` and ``?``. The paper's data are English; we read
"alphanumeric" in the Unicode sense, so Hebrew, Arabic, Greek, Cyrillic, Devanagari or CJK words are
kept (with their vowel signs), and accents on Latin, Greek and Cyrillic letters are folded (``café``
and ``cafe\u0301`` both become ``cafe``). Emoji and symbols are not alphanumeric and are dropped.
spaCy's English tokenizer splits on spaces and punctuation, so Chinese or Japanese text, written
without spaces, becomes one token per run between punctuation marks. A token whose normalised form is empty
(pure punctuation such as ``,`` or ``"``) is dropped from the model input, but every kept token
remembers its original surface string and character span, so attention can be painted back onto
the exact text the user pasted.
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hierattn.data.spacy_pipeline import pipeline
from hierattn.limits import CHARACTERS

PAD, UNK = "<pad>", "<unk>"
# A text beyond limits.CHARACTERS (HIERATTN_MAX_CHARS, default 1,000,000) is cut and reported;
# spaCy's nlp.max_length follows it.


@dataclass(frozen=True, slots=True)  # slots: a paste makes a thousand; 0.8 µs each against 1.1
class Token:
    text: str  # surface form as pasted
    norm: str  # normalised form the model sees
    start: int  # character offsets into the original text: text[start:end] == surface
    end: int


@dataclass(frozen=True, slots=True)
class Sentence:
    tokens: tuple[Token, ...]
    start: int
    end: int


@dataclass
class Truncation:
    """What the caps cut off. Nothing is cut silently: the app and the CLI print ``message``."""

    total_sentences: int = 0
    kept_sentences: int = 0
    words_dropped: int = 0  # words cut from over-long sentences
    chars_dropped: int = 0  # characters beyond limits.CHARACTERS
    window_words_dropped: int = 0  # words past a subword model's window (``data.subwords``)
    window: int | None = None  # that window, in tokens

    @property
    def truncated(self) -> bool:
        return (self.kept_sentences < self.total_sentences or self.words_dropped > 0 or self.chars_dropped > 0
                or self.window_words_dropped > 0)

    @property
    def message(self) -> str:
        parts = []
        if self.chars_dropped:
            parts.append(f"the last {self.chars_dropped:,} characters were ignored (limit {CHARACTERS.value:,} "
                         f"characters; set {CHARACTERS.variable} to raise it)")
        if self.kept_sentences < self.total_sentences:
            parts.append(f"only the first {self.kept_sentences:,} of {self.total_sentences:,} sentences were read")
        if self.words_dropped:
            parts.append(f"{self.words_dropped:,} words beyond the per-sentence cap were dropped")
        if self.window_words_dropped:
            parts.append(f"the model reads at most {self.window:,} subword tokens, so the last "
                         f"{self.window_words_dropped:,} words were not read")
        return "; ".join(parts)


@dataclass
class Document:
    text: str
    sentences: list[Sentence]
    truncation: Truncation = field(default_factory=Truncation)
    # Character spans of ``text`` that are not read although they lie inside it: what the caps cut
    # (the words past a sentence's cap, the sentences past the last one kept) and what an erasure took
    # out. A word model reads ``sentences`` and needs none of this; a model that reads the running text
    # through its own tokenizer (``data.subwords``) reads ``text`` less these spans.
    skipped: tuple[tuple[int, int], ...] = ()

    def skipping(self, spans) -> Document:
        """This document with ``spans`` no longer read as well (``skipped``, merged in order)."""
        return Document(self.text, self.sentences, self.truncation, tuple(sorted({*self.skipped, *spans})))

    @property
    def num_tokens(self) -> int:
        return sum(len(s.tokens) for s in self.sentences)

    def unread(self) -> dict[int, str]:
        """The text the model did not read, by the index of the sentence it follows: words cut from
        an over-long sentence, and after the last sentence read, the sentences beyond the caps
        (what ``viz.document_html`` greys). Empty when the caps cut nothing."""
        if not self.truncation.truncated or not self.sentences:
            return {}
        starts = [s.start for s in self.sentences[1:]] + [len(self.text)]
        gaps = {i: self.text[s.end: after].rstrip() for i, (s, after) in enumerate(zip(self.sentences, starts))}
        return {i: gap for i, gap in gaps.items() if gap.strip()}  # with the space before it, as typed

    def spans(self) -> list[tuple[int, int, list[tuple[int, int]]]]:
        """Each sentence's character span and its words' spans: what ``viz.document_html`` shades."""
        return [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in self.sentences]


@dataclass(frozen=True)
class TextConfig:
    max_sentences: int = 50
    max_words: int = 60
    lowercase: bool = True
    # "unicode": letters of every script kept, accents folded (see the module docstring).
    # "ascii": only [0-9a-z.!?] kept, what checkpoints written before it existed were trained on;
    # they load with it, so the app reads text the way their vocabulary expects.
    letters: str = "unicode"
    # The first ``max_tokens`` words of the document, before the caps above: HA-LSTM's input length q
    # (its Tables 2-5). None: no such cap.
    max_tokens: int | None = None


@lru_cache(maxsize=1 << 16)  # words repeat: most tokens of a document hit the cache
def normalise(surface: str, lowercase: bool = True, letters: str = "unicode") -> str:
    if surface.isascii() or letters == "ascii":  # the common case, and the paper's: [0-9a-z.!?] kept
        surface = surface.lower() if lowercase else surface
        return "".join(ch for ch in surface if ch.isascii() and (ch.isalnum() or ch in ".!?"))
    kept = []
    for ch in unicodedata.normalize("NFKD", surface):
        if unicodedata.combining(ch) and kept and ord(kept[-1]) < 0x500:
            continue  # an accent on a Latin, Greek or Cyrillic letter
        kept.append(ch)
    surface = unicodedata.normalize("NFKC", "".join(kept))  # recompose what stays (Hangul, kana)
    surface = surface.lower() if lowercase else surface
    return "".join(ch for ch in surface if ch.isalnum() or ch in ".!?" or unicodedata.category(ch)[0] == "M")


_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _clean(text: str) -> str:
    # Control characters (binary junk) become spaces so character offsets stay aligned with the input.
    if text.isascii():  # the common case, by a regular expression instead of a Python loop
        return _ASCII_CONTROL.sub(" ", text)
    return "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text)


_CJK_CHARS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff01-\uff0f\uff1a-\uff1f"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_PIECE = re.compile(f"[{_CJK_CHARS}]|[^{_CJK_CHARS}\\s]+")  # one CJK character, or a run of anything else
_CJK_SENTENCE_END = "。！？!?."


def _pieces(tok):
    """(surface, start) pieces of a spaCy token: itself, or one per character for Chinese and
    Japanese, which spaCy's English tokenizer leaves in runs as long as a clause (no spaces)."""
    if not _CJK.search(tok.text):
        return [(tok.text, tok.idx)]
    return [(m.group(), tok.idx + m.start()) for m in _CJK_PIECE.finditer(tok.text)]


def _to_sentences(spacy_doc, config: TextConfig, text: str) -> list[Sentence]:
    """``text``: what spaCy read, which is ``spacy_doc.text`` (its tokenisation keeps every
    character), passed in because ``Doc.text`` rebuilds it from a Token per word (0.6 ms a
    1,000-word text)."""
    if config.letters != "unicode" or not _CJK.search(text):
        return _plain_sentences(spacy_doc, config, text)
    return _split_sentences(spacy_doc, config)


def _split_sentences(spacy_doc, config: TextConfig) -> list[Sentence]:
    """Sentences of normalised tokens, Chinese and Japanese runs split into characters (``_pieces``)
    and cut after 。！？ (any text; ``_plain_sentences`` is the same for text without them)."""
    sentences = []
    for sent in spacy_doc.sents:
        # The sentence's span covers all of its characters (leading quotes, symbols), not just its
        # kept tokens, so a rendering of the sentences loses nothing of the text.
        raw = sent.text
        start = sent.start_char + len(raw) - len(raw.lstrip())
        tokens = []
        for tok in sent:
            pieces = _pieces(tok) if config.letters == "unicode" else [(tok.text, tok.idx)]
            for surface, idx in pieces:
                norm = normalise(surface, config.lowercase, config.letters)
                if norm:
                    tokens.append(Token(surface, norm, idx, idx + len(surface)))
                if len(pieces) > 1 and surface[-1] in _CJK_SENTENCE_END and tokens:  # 。 ends a sentence
                    sentences.append(Sentence(tuple(tokens), start, idx + len(surface)))
                    tokens, start = [], idx + len(surface)
        if tokens:
            while raw[start - sent.start_char: start - sent.start_char + 1].isspace():  # after a split at 。
                start += 1
            sentences.append(Sentence(tuple(tokens), start, sent.start_char + len(raw.rstrip())))
    return sentences


def _plain_sentences(spacy_doc, config: TextConfig, text: str) -> list[Sentence]:
    """``_to_sentences`` of a text with no Chinese or Japanese to split, read from spaCy's arrays
    (offsets, lengths, sentence starts) rather than its Token objects, which spaCy makes anew at
    each access (five per word here): 2.4 ms a 1,000-word text, against 3.2 through the Tokens.
    The same sentences (tests/data/test_text.py compares the two over the built-in corpora)."""
    from spacy.attrs import IDX, LENGTH, SENT_START

    rows = spacy_doc.to_array([IDX, LENGTH, SENT_START]).tolist()  # (offset, length, 1 at a sentence start)
    starts = [i for i, row in enumerate(rows) if i == 0 or row[2] == 1] + [len(rows)]
    sentences = []
    for first, end in zip(starts, starts[1:]):
        span_start = rows[first][0]
        raw = text[span_start: rows[end - 1][0] + rows[end - 1][1]]
        tokens = []
        for idx, length, _ in rows[first:end]:
            surface = text[idx: idx + length]
            norm = normalise(surface, config.lowercase, config.letters)
            if norm:
                tokens.append(Token(surface, norm, idx, idx + length))
        if tokens:
            sentences.append(Sentence(tuple(tokens), span_start + len(raw) - len(raw.lstrip()),
                                      span_start + len(raw.rstrip())))
    return sentences


def _first_words(sentences: list[Sentence], limit: int, skipped: list) -> tuple[list[Sentence], int]:
    """The sentences holding the document's first ``limit`` words (the last one cut), and how many
    words were cut from that last sentence (the sentences left out are counted as sentences); the
    span cut from that sentence goes to ``skipped``."""
    kept, left, cut = [], limit, 0
    for s in sentences:
        if left <= 0:
            break
        toks = s.tokens[:left]
        if len(toks) < len(s.tokens):
            cut = len(s.tokens) - len(toks)
            skipped.append((toks[-1].end, s.end))
            s = Sentence(toks, toks[0].start, toks[-1].end)
        kept.append(s)
        left -= len(toks)
    return kept, cut


def _capped(text: str, sentences: list[Sentence], config: TextConfig, chars_dropped: int) -> Document:
    kept, skipped = [], []
    words_dropped = 0
    total = len(sentences)
    if config.max_tokens is not None:
        sentences, words_dropped = _first_words(sentences, config.max_tokens, skipped)
    for s in sentences[: config.max_sentences]:
        if len(s.tokens) > config.max_words:
            words_dropped += len(s.tokens) - config.max_words
            toks = s.tokens[: config.max_words]
            skipped.append((toks[-1].end, s.end))
            s = Sentence(toks, toks[0].start, toks[-1].end)
        kept.append(s)
    if len(kept) < total:  # every sentence after the last one kept
        skipped.append((kept[-1].end if kept else 0, len(text)))
    trunc = Truncation(total, len(kept), words_dropped, chars_dropped)
    return Document(text, kept, trunc, tuple(sorted(skipped)))


def tokenize(text: str, config: TextConfig = TextConfig()) -> Document:
    """Split ``text`` into capped sentences of normalised tokens. Never raises on str input."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    limit = CHARACTERS.value
    chars_dropped = max(0, len(text) - limit)
    text = text[:limit]
    cleaned = _clean(text)
    sentences = _to_sentences(pipeline(limit)(cleaned), config, cleaned)
    return _capped(text, sentences, config, chars_dropped)


def tokenize_many(texts: Iterable[str], config: TextConfig = TextConfig(), batch_size: int = 256) -> list[Document]:
    """Fast path for data sets: ``nlp.pipe`` over many texts."""
    limit = CHARACTERS.value
    texts = [t[:limit] for t in texts]
    cleaned = [_clean(t) for t in texts]
    docs = pipeline(limit).pipe(cleaned, batch_size=batch_size)
    return [_capped(t, _to_sentences(d, config, c), config, 0) for t, c, d in zip(texts, cleaned, docs)]


class Vocab:
    """Word <-> id. Id 0 is ``<pad>``, id 1 is ``<unk>``; the rest by descending frequency."""

    def __init__(self, itos: list[str]):
        if itos[:2] != [PAD, UNK]:
            raise ValueError("a vocabulary must start with <pad>, <unk>")
        if len(set(itos)) != len(itos):
            raise ValueError("vocabulary has duplicate entries")
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    pad_id, unk_id = 0, 1

    @classmethod
    def build(cls, documents: Iterable[Document], min_freq: int = 2, max_size: int | None = None) -> Vocab:
        counts = Counter(t.norm for d in documents for s in d.sentences for t in s.tokens)
        words = sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))
        return cls([PAD, UNK] + words[:max_size])

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: Sentence) -> list[int]:
        return [self.stoi.get(t.norm, self.unk_id) for t in sentence.tokens]

    def unknown(self, document: Document) -> list[list[bool]]:
        """Per sentence, per word: not in the vocabulary (the model reads ``<unk>`` there)."""
        return [[t.norm not in self.stoi for t in s.tokens] for s in document.sentences]

    def within_window(self, document: Document) -> Document:
        """The document as the model reads it: a word model reads every word the caps let through."""
        return document

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.itos, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        itos = json.loads(Path(path).read_text())
        if not isinstance(itos, list) or not all(isinstance(w, str) for w in itos):
            raise ValueError("vocab.json must be a JSON list of strings")
        return cls(itos)
