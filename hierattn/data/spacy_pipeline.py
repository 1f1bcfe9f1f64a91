"""The spaCy pipeline every text is read with: ``spacy.blank("en")``, its sentencizer and our line
breaks, one per process, fed long space-free runs in pieces, and replaced when its vocabulary has
grown past ``VOCABULARY_BOUND`` strings.

spaCy keeps every string it has ever read in its vocabulary, for the life of the pipeline: 600,000
distinct words (3,000 pastes of random tokens) grew a process by 261 MB, and a server keeps its
pipeline for a whole course. spaCy's memory zones, which free what a block of work added, must not
be nested, and a server's sessions read text on many threads at once; so the pipeline is replaced
instead, a new one built in 0.08 s of CPU, while a thread still reading with the old one finishes
with it. The same pastes now peak 80 MB above the start. Tokenisation does not depend on what the
vocabulary holds: a new pipeline reads every text as the old one did (a test).
"""
from __future__ import annotations

import re
import threading

from hierattn.limits import CHARACTERS

# spaCy's tokenizer strips prefixes and suffixes from a space-free run one character at a time,
# copying the rest each time: quadratic in the run's length (20,000 "!" took 25 s, 20,000 emoji
# 33 s). It sees such a run in pieces of at most MAX_RUN characters, so tokenising is linear in
# the text for every input. No word of any language is that long; a longer URL or a run of symbols
# is cut into pieces, which normalise to the same nothing or the same junk words as before.
MAX_RUN = 128
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN + 1},}}")
# about 43 MB of a process's memory (0.43 KB a string). Reading bbc-news's 2,225 articles adds 47,000
# strings; the 38,000 tweets add more than 100,000 (names, tags, links), so a pipeline that has read
# them is replaced at its next use. A data set read in one call (``tokenize_many``) keeps its
# pipeline to the end of it.
VOCABULARY_BOUND = 100_000


def run_pieces(text: str) -> list[str]:
    """``text`` cut inside its space-free runs longer than MAX_RUN, every MAX_RUN characters; the
    pieces joined are ``text``."""
    cuts = [cut for run in _LONG_RUN.finditer(text) for cut in range(run.start() + MAX_RUN, run.end(), MAX_RUN)]
    return [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]


class BoundedTokenizer:
    """spaCy's tokenizer, fed long space-free runs in pieces of MAX_RUN characters (see above).
    A text without such a run is tokenised exactly as by spaCy alone."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.vocab = tokenizer.vocab
        self.longest_piece = 0  # the longest space-free run spaCy was given, for the tests

    def __call__(self, text: str):
        if not _LONG_RUN.search(text):
            return self.tokenizer(text)
        from spacy.tokens import Doc

        words: list[str] = []
        spaces: list[bool] = []
        for piece in run_pieces(text):
            self.longest_piece = max(self.longest_piece, max(map(len, piece.split()), default=0))
            for token in self.tokenizer(piece):
                words.append(token.text)
                spaces.append(bool(token.whitespace_))
        return Doc(self.vocab, words=words, spaces=spaces)


def _line_breaks(doc):
    # A line break ends a sentence too: headlines, list items and tweets rarely end in '.'.
    # Set in one array: each `token.is_sent_start = True` scans the whole document, so a text
    # of many short lines took quadratic time (100,000 one-word lines: 347 s). The space tokens
    # are found in an array too: a spaCy Token made for every word cost 1.2 ms a 1,000-word text.
    from spacy.attrs import IS_SPACE, SENT_START

    spaces = doc.to_array(IS_SPACE)[:-1].nonzero()[0].tolist()
    after = [i + 1 for i in spaces if "\n" in doc[i].text]
    if after:
        starts = doc.to_array(SENT_START)  # (tokens,): 1 starts a sentence, -1 does not
        starts[after] = 1
        doc.from_array([SENT_START], starts.reshape(-1, 1))
    return doc


def _built():
    import spacy
    from spacy.language import Language

    if not Language.has_factory("hierattn_line_breaks"):
        Language.component("hierattn_line_breaks", func=_line_breaks)
    nlp = spacy.blank("en")
    nlp.tokenizer = BoundedTokenizer(nlp.tokenizer)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("hierattn_line_breaks")
    nlp.max_length = CHARACTERS.value + 1
    return nlp


_current = None
_lock = threading.Lock()


def pipeline(limit: int | None = None):
    """This process's pipeline, built on first use and replaced once its vocabulary holds more than
    ``VOCABULARY_BOUND`` strings; accepting texts of ``limit`` characters (the limit may be raised
    after it is built)."""
    global _current
    nlp = _current
    if nlp is None or len(nlp.vocab.strings) > VOCABULARY_BOUND:
        with _lock:  # one thread builds; the others take what it built
            if _current is None or _current is nlp:
                _current = _built()
            nlp = _current
    if limit is not None:
        nlp.max_length = max(nlp.max_length, limit + 1)
    return nlp
