"""Counterfactual edits of a document: drop or reorder sentences, replace a word; the edited text,
with where each change landed, so the page can show the prediction and the attention before and
after with the changes marked.

Sentences are the ones the model read (``Document.sentences``), each taken from the pasted text
with its own characters (quotes and symbols included); the edited text joins the kept ones with a
space, or a blank line where the original had a line break between them. Replacement is of whole
words, case-sensitive, in the sentences kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hierattn.data.text import Document


@dataclass
class Edit:
    order: list[int]  # original sentence indices, in the new order; a missing index is dropped
    replacements: list[tuple[str, str]] = field(default_factory=list)  # (word, by), whole words

    def describe(self, count: int) -> list[str]:
        """What the edit does, in words, for a caption."""
        out = []
        dropped = [i for i in range(count) if i not in self.order]
        if dropped:
            out.append("dropped " + ", ".join(f"S{i + 1}" for i in dropped))
        if self.order != sorted(self.order):
            out.append("new order " + " ".join(f"S{i + 1}" for i in self.order))
        out += [f"'{a}' → '{b}'" for a, b in self.replacements if a]
        return out


@dataclass
class Edited:
    text: str
    replaced: list[tuple[int, int]]  # spans of the replacing words in ``text``
    sentence_of: list[int]  # for each sentence of ``text`` (in order), its original index


def apply(document: Document, edit: Edit) -> Edited:
    """The edited text. Raises ValueError for an index that is not a sentence of the document."""
    count = len(document.sentences)
    if any(not 0 <= i < count for i in edit.order) or len(set(edit.order)) != len(edit.order):
        raise ValueError(f"sentence order must name distinct sentences 0..{count - 1}, got {edit.order}")
    table = {word: by for word, by in edit.replacements if word}
    pattern = (re.compile("(?<!\\w)(" + "|".join(re.escape(w) for w in sorted(table, key=len,
                                                                              reverse=True)) + ")(?!\\w)")
               if table else None)  # one pass: a replacement is never replaced again
    pieces, replaced, position = [], [], 0
    for n, i in enumerate(edit.order):
        s = document.sentences[i]
        if n:
            previous = document.sentences[edit.order[n - 1]]
            separator = "\n\n" if "\n" in document.text[previous.end: s.start] else " "
            pieces.append(separator)
            position += len(separator)
        sentence, last = document.text[s.start: s.end], 0
        if pattern:
            for m in pattern.finditer(sentence):
                pieces.append(sentence[last: m.start()])
                position += m.start() - last
                by = table[m.group()]
                pieces.append(by)
                replaced.append((position, position + len(by)))
                position += len(by)
                last = m.end()
        pieces.append(sentence[last:])
        position += len(sentence) - last
    text = "".join(pieces)
    assert position == len(text)
    return Edited(text, replaced, list(edit.order))
