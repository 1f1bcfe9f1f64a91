"""Text pipeline: sentences and tokens with their character spans, normalisation, vocabulary.

Normalisation follows HCAN (Gao et al. 2018) section 4.3: lowercase, and drop every character
that is not alphanumeric except ``.``, ``!`` and ``?``. A token whose normalised form is empty
(pure punctuation such as ``,`` or ``"``) is dropped from the model input, but every kept token
remembers its original surface string and character span, so attention can be painted back onto
the exact text the user pasted.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable

PAD, UNK = "<pad>", "<unk>"
_DROP = re.compile(r"[^0-9a-z.!?]+")
# spaCy refuses texts longer than nlp.max_length; anything beyond this is cut and reported.
MAX_CHARS = 1_000_000


@dataclass(frozen=True)
class Token:
    text: str  # surface form as pasted
    norm: str  # normalised form the model sees
    start: int  # character offsets into the original text: text[start:end] == surface
    end: int


@dataclass(frozen=True)
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
    chars_dropped: int = 0  # characters beyond MAX_CHARS

    @property
    def truncated(self) -> bool:
        return self.kept_sentences < self.total_sentences or self.words_dropped > 0 or self.chars_dropped > 0

    @property
    def message(self) -> str:
        parts = []
        if self.chars_dropped:
            parts.append(f"the last {self.chars_dropped:,} characters were ignored (limit {MAX_CHARS:,})")
        if self.kept_sentences < self.total_sentences:
            parts.append(f"only the first {self.kept_sentences} of {self.total_sentences} sentences were read")
        if self.words_dropped:
            parts.append(f"{self.words_dropped:,} words beyond the per-sentence cap were dropped")
        return "; ".join(parts)


@dataclass
class Document:
    text: str
    sentences: list[Sentence]
    truncation: Truncation = field(default_factory=Truncation)

    @property
    def num_tokens(self) -> int:
        return sum(len(s.tokens) for s in self.sentences)


@dataclass(frozen=True)
class TextConfig:
    max_sentences: int = 50
    max_words: int = 60
    lowercase: bool = True


@lru_cache(maxsize=1)
def _nlp():
    import spacy
    from spacy.language import Language

    @Language.component("hierattn_line_breaks")
    def line_breaks(doc):
        # A line break ends a sentence too: headlines, list items and tweets rarely end in '.'.
        for tok in doc[:-1]:
            if tok.is_space and "\n" in tok.text:
                doc[tok.i + 1].is_sent_start = True
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("hierattn_line_breaks")
    nlp.max_length = MAX_CHARS + 1
    return nlp


@lru_cache(maxsize=1 << 16)  # words repeat: most tokens of a document hit the cache
def normalise(surface: str, lowercase: bool = True) -> str:
    return _DROP.sub("", surface.lower() if lowercase else surface)


def _clean(text: str) -> str:
    # Control characters (binary junk) become spaces so character offsets stay aligned with the input.
    return "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text)


def _to_sentences(spacy_doc, lowercase: bool) -> list[Sentence]:
    sentences = []
    for sent in spacy_doc.sents:
        tokens = []
        for tok in sent:
            norm = normalise(tok.text, lowercase)
            if norm:
                tokens.append(Token(tok.text, norm, tok.idx, tok.idx + len(tok.text)))
        if tokens:
            # The sentence's span covers all of its characters (leading quotes, symbols), not
            # just its kept tokens, so a rendering of the sentences loses nothing of the text.
            raw = sent.text
            start = sent.start_char + len(raw) - len(raw.lstrip())
            sentences.append(Sentence(tuple(tokens), start, start + len(raw.strip())))
    return sentences


def _capped(text: str, sentences: list[Sentence], config: TextConfig, chars_dropped: int) -> Document:
    kept = []
    words_dropped = 0
    for s in sentences[: config.max_sentences]:
        if len(s.tokens) > config.max_words:
            words_dropped += len(s.tokens) - config.max_words
            toks = s.tokens[: config.max_words]
            s = Sentence(toks, toks[0].start, toks[-1].end)
        kept.append(s)
    trunc = Truncation(len(sentences), len(kept), words_dropped, chars_dropped)
    return Document(text, kept, trunc)


def tokenize(text: str, config: TextConfig = TextConfig()) -> Document:
    """Split ``text`` into capped sentences of normalised tokens. Never raises on str input."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    chars_dropped = max(0, len(text) - MAX_CHARS)
    text = text[:MAX_CHARS]
    sentences = _to_sentences(_nlp()(_clean(text)), config.lowercase)
    return _capped(text, sentences, config, chars_dropped)


def tokenize_many(texts: Iterable[str], config: TextConfig = TextConfig(), batch_size: int = 256) -> list[Document]:
    """Fast path for data sets: ``nlp.pipe`` over many texts."""
    texts = [t[:MAX_CHARS] for t in texts]
    docs = _nlp().pipe((_clean(t) for t in texts), batch_size=batch_size)
    return [_capped(t, _to_sentences(d, config.lowercase), config, 0) for t, d in zip(texts, docs)]


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
    def build(cls, documents: Iterable[Document], min_freq: int = 2, max_size: int | None = None) -> "Vocab":
        counts = Counter(t.norm for d in documents for s in d.sentences for t in s.tokens)
        words = sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))
        return cls([PAD, UNK] + words[:max_size])

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: Sentence) -> list[int]:
        return [self.stoi.get(t.norm, self.unk_id) for t in sentence.tokens]

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.itos, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        itos = json.loads(Path(path).read_text())
        if not isinstance(itos, list) or not all(isinstance(w, str) for w in itos):
            raise ValueError("vocab.json must be a JSON list of strings")
        return cls(itos)
