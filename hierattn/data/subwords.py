"""Subword tokens for a model that brings its own tokenizer (a Hugging Face transformer): the input
adapter between our documents (sentences of words, with their character spans) and the pieces the
model reads.

The model reads the text, not our words: the document's characters as pasted, through its own
tokenizer, exactly as ``tokenizer(text)`` in plain transformers reads them, so that the app predicts
what the library predicts. Its folder's tokenizer does whatever it does to text (lower-casing, accent
stripping, splitting punctuation off); the app adds nothing, so a practitioner's folder behaves here
as it does in their own code. Our sentence and word caps never bind before the model's window
(``window_only``). What an erasure leaves out (``Document.skipped``) is taken
out of the characters read, each span with the space after it, so that erasing a word erases its
pieces and a byte-level BPE never reads a doubled space.

Pieces are mapped onto our words by character offsets: a piece belongs to the word (``data.text``'s
token, in reading order) that holds its first non-space character. A piece in no word (punctuation,
which our words leave out, symbols, emoji) is read by the model and shown at the token level, and
belongs to no word: ``NO_WORD`` in ``Pieces.word``, apart from the special tokens' -1. So Explore's
token map shows the commas Clark et al. find so much attention on, and the word and sentence maps
stay aligned one for one with every other model's words (Compare, erasure).

The tokenizer is read from ``tokenizer.json`` alone (the Rust ``tokenizers`` library's format, JSON,
never code); its post-processor says which special tokens frame a sequence (``[CLS] ... [SEP]``,
``<s> ... </s>``). A document longer than the model's window is cut after its window's last piece, as
transformers' ``truncation=True`` cuts it; the words with no piece read are dropped and counted
(``Truncation.window_words_dropped``), and the rest of the text is skipped.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import replace
from pathlib import Path

import torch

from hierattn.contract import Pieces
from hierattn.data.files import read_bytes
from hierattn.data.text import Document, Sentence, TextConfig
from hierattn.data.tokenizer_process import TokenizerProcess, shared
from hierattn.data.tokenizer_rules import tokenizer_problem
from hierattn.limits import VOCAB_MB

TOKENIZER_FILE = "tokenizer.json"
NO_WORD = -2  # ``Pieces.word`` of a piece read that lies in no word (punctuation, symbols); special tokens: -1


def window_only(text: TextConfig, window: int) -> TextConfig:
    """``text`` with no sentence or word cap that can bind before a ``window`` of pieces: a model of
    subword pieces reads the text to its window, as ``tokenizer(text, truncation=True)`` does, and
    the word models' caps a folder's ``hierattn.json`` records (8 sentences x 50 words for the tweets
    transformers) once cut the text before the tokenizer. On 200 held-out reviews tweets-minilm then
    read fewer pieces on 50 and its probabilities moved by up to 0.258; a sentence cap also dropped
    words in the middle of the text. A window's pieces hold at most ``window`` words (every word
    read has a piece) and so at most ``window`` sentences; twice that leaves room for words the
    tokenizer reads as nothing (a run of marks its normalizer strips), so the window is the cut."""
    return replace(text, max_sentences=max(text.max_sentences, 2 * window),
                   max_words=max(text.max_words, 2 * window), max_tokens=None)


def read_text(document: Document) -> tuple[str, list[tuple[int, int]]]:
    """The characters a subword model reads of ``document``: its text less its skipped spans (each
    with the whitespace after it), and the runs kept, as (start in the string read, start in
    ``document.text``), in order."""
    text, runs, pieces, at, read = document.text, [], [], 0, 0
    for a, b in document.skipped:
        if b <= at:
            continue
        a = max(a, at)
        while b < len(text) and text[b].isspace() and (a == 0 or text[a - 1].isspace()):
            b += 1
        if a > at:
            runs.append((read, at))
            pieces.append(text[at:a])
            read += a - at
        at = b
    if at < len(text):
        runs.append((read, at))
        pieces.append(text[at:])
    return "".join(pieces), runs


def _words_before(document: Document, stop: int) -> int:
    """How many of the document's words (reading order) start before character ``stop``."""
    return sum(t.start < stop for s in document.sentences for t in s.tokens)


def _original(runs: list[tuple[int, int]], position: int) -> int:
    """A position of the string read, in ``document.text``."""
    read, start = runs[bisect.bisect_right(runs, (position, float("inf"))) - 1]
    return start + position - read


# A folder's tokenizer settings beside tokenizer.json, which transformers reads to build its tokenizer
# class: without them it builds the model type's default (a cased BERT lowercased with its accents
# stripped, ALBERT's accents dropped, XLM-R's unknown pieces mapped to </s>). JSON only; a key that
# names code (``auto_map``) is left out, as hierattn never runs a folder's code.
SETTINGS = ("tokenizer_config.json", "special_tokens_map.json")
CODE_KEYS = ("auto_map",)


def _settings(directory: Path) -> dict[str, dict]:
    """The settings files of ``directory`` that are JSON objects (each within ``limits.VOCAB_MB``)."""
    out = {}
    for name in SETTINGS:
        try:
            found = json.loads(read_bytes(directory / name, VOCAB_MB).decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(found, dict):
            out[name] = {k: v for k, v in found.items() if k not in CODE_KEYS}
    return out


class SubwordVocab:
    """A Hugging Face tokenizer as a model's vocabulary: documents in, ``Pieces`` out.

    ``window``: the most tokens the model reads in one sequence, special tokens included.
    ``pad_id``: the id padding a batch's shorter sequences (never attended to)."""

    def __init__(self, tokenizer, window: int, pad_id: int):
        self.tokenizer = tokenizer
        self.process: TokenizerProcess | None = None  # a folder's tokenizer reads pastes in a child (load)
        self.window = int(window)
        self.pad_id = int(pad_id)
        probe = tokenizer.encode("a", add_special_tokens=True)
        special = probe.special_tokens_mask
        first = special.index(0) if 0 in special else len(special)
        last = len(special) - special[::-1].index(0) if 0 in special else len(special)
        self.prefix, self.suffix = list(probe.ids[:first]), list(probe.ids[last:])
        self.prefix_tokens, self.suffix_tokens = list(probe.tokens[:first]), list(probe.tokens[last:])
        unk = tokenizer.get_vocab().get(getattr(tokenizer.model, "unk_token", None) or "")
        if unk is None and type(tokenizer.model).__name__ == "Unigram":  # it keeps an id, not a token
            unk = json.loads(tokenizer.to_str())["model"].get("unk_id")
        self.unk_id = unk
        if self.window <= len(self.prefix) + len(self.suffix):
            raise ValueError(f"a window of {self.window} tokens leaves no room for words")

    @classmethod
    def load(cls, directory: str | Path, window: int, pad_id: int) -> SubwordVocab:
        """The tokenizer of a folder (its ``tokenizer.json``, read within ``limits.VOCAB_MB``)."""
        from tokenizers import Tokenizer  # lazily: only a transformer needs it

        path = Path(directory) / TOKENIZER_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{TOKENIZER_FILE} is missing: hierattn reads a fast tokenizer's file (save "
                                    "it with AutoTokenizer.from_pretrained(folder).save_pretrained(folder))")
        text = read_bytes(path, VOCAB_MB).decode("utf-8")
        if problem := tokenizer_problem(json.loads(text)):  # before the library reads it: see tokenizer_rules
            raise ValueError(problem)
        tokenizer = Tokenizer.from_str(text)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        vocab = cls(tokenizer, window, pad_id)
        vocab.process = shared(text)  # one child per tokenizer in this process
        vocab.settings = _settings(Path(directory))
        return vocab

    settings: dict[str, dict] = {}  # file name -> its JSON: the folder's tokenizer settings (``SETTINGS``)

    def save(self, directory: str | Path) -> None:
        """``tokenizer.json``; the settings files of the folder it came from (``SETTINGS``), so that a
        model fine-tuned from a cased BERT is tokenised cased by plain transformers too; and
        ``tokenizer_config.json`` with the window as ``model_max_length``: without it transformers'
        ``tokenizer(text, truncation=True)`` cuts nothing, and a text longer than the window fails in
        the model's position table instead of being read as the app reads it."""
        self.tokenizer.save(str(Path(directory) / TOKENIZER_FILE))
        for name, settings in self.settings.items():
            (Path(directory) / name).write_text(json.dumps(settings, indent=2))
        config = Path(directory) / "tokenizer_config.json"
        settings = json.loads(config.read_text()) if config.is_file() else {}
        config.write_text(json.dumps({**settings, "model_max_length": self.window}, indent=2))

    def __len__(self) -> int:
        return self.tokenizer.get_vocab_size()

    @property
    def room(self) -> int:
        """Word pieces one sequence holds: the window less the special tokens around them."""
        return self.window - len(self.prefix) - len(self.suffix)

    def encode(self, sentence: Sentence) -> list[int]:
        """``Batch.word_ids`` for a sentence: 1 for every word. The model reads ``Batch.pieces``;
        word ids only mark the real words (as ``<unk>`` would)."""
        return [1] * len(sentence.tokens)

    def _encodings(self, documents: list[Document]):
        """Per document: (piece ids, piece tokens, word index of each piece or ``NO_WORD``, where in
        ``document.text`` each piece ends), the text read in one pass (see the module doc)."""
        out = []
        # one document at a time: encode_batch runs on a thread pool of every core, past the process's
        # thread budget (hierattn.threads), and warns after a fork
        for d in documents:
            text, runs = read_text(d)
            words = [t for s in d.sentences for t in s.tokens]
            starts = [t.start for t in words]
            enc = (self.process.encode(text) if self.process is not None
                   else self.tokenizer.encode(text, add_special_tokens=False))
            owners, ends = [], []
            for a, b in enc.offsets:
                first = a
                while first < b - 1 and text[first].isspace():
                    first += 1
                position = _original(runs, first) if runs else 0
                w = bisect.bisect_right(starts, position) - 1
                owners.append(w if w >= 0 and position < words[w].end else NO_WORD)
                ends.append(_original(runs, b - 1) + 1 if runs and b > a else position)
            out.append((list(enc.ids), list(enc.tokens), owners, ends))
        return out

    def _read(self, document: Document) -> tuple[list[int], list[str], list[int], int]:
        """The pieces of ``document`` the window holds, and where in its text reading stops."""
        (ids, tokens, words, ends), = self._encodings([document])
        if len(ids) <= self.room:
            return ids, tokens, words, len(document.text)
        return ids[: self.room], tokens[: self.room], words[: self.room], ends[self.room - 1]

    def words_read(self, document: Document) -> int:
        """How many of the document's words (reading order) the model reads: those that start before
        the window's last piece ends."""
        return _words_before(document, self._read(document)[3])

    def within_window(self, document: Document) -> Document:
        """``document`` cut to the words the model reads, the cut counted in its truncation and the
        rest of the text skipped."""
        stop = self._read(document)[3]  # one encoding of the document for both the cut and the words kept
        keep = _words_before(document, stop)
        if keep >= document.num_tokens:
            return document
        sentences, left = [], keep
        for s in document.sentences:
            if left <= 0:
                break
            tokens = s.tokens[:left]
            sentences.append(s if len(tokens) == len(s.tokens) else Sentence(tokens, tokens[0].start, tokens[-1].end))
            left -= len(tokens)
        truncation = replace(document.truncation, window_words_dropped=document.num_tokens - keep,
                             window=self.window)
        return Document(document.text, sentences, truncation, document.skipped).skipping([(stop, len(document.text))])

    def lengths(self, documents: list[Document]) -> list[int]:
        """How many tokens the model reads of each document, special tokens included (batching
        sorts by it: a batch is padded to its longest)."""
        frame = len(self.prefix) + len(self.suffix)
        return [min(len(ids), self.room) + frame for ids, _, _, _ in self._encodings(documents)]

    def pieces(self, documents: list[Document]) -> Pieces:
        """The documents as the model reads them, each cut at the window on a word boundary."""
        rows = []
        for ids, _, words, _ in self._encodings(documents):
            ids, words = ids[: self.room], words[: self.room]  # transformers' truncation=True
            rows.append((self.prefix + ids + self.suffix,
                         [-1] * len(self.prefix) + words + [-1] * len(self.suffix)))
        length = max(len(r[0]) for r in rows)
        ids = torch.full((len(rows), length), self.pad_id, dtype=torch.long)
        word = torch.full((len(rows), length), -1, dtype=torch.long)
        mask = torch.zeros(len(rows), length, dtype=torch.bool)
        for b, (row_ids, row_words) in enumerate(rows):
            ids[b, : len(row_ids)] = torch.tensor(row_ids)
            word[b, : len(row_words)] = torch.tensor(row_words)
            mask[b, : len(row_ids)] = True
        return Pieces(ids, mask, word)

    def tokens(self, document: Document) -> list[tuple[str, int]]:
        """(token as the tokenizer writes it, reading-order word index or -1 for a special token) of
        every token the model reads of ``document``, special tokens included, in sequence order;
        ``NO_WORD`` for a piece in no word."""
        ids, tokens, words, _ = self._read(document)
        # an unknown piece as the model reads it: the unknown token, not the text it stands for (a
        # Unigram tokenizer writes the text: an unknown "," was labelled "," where the model read <unk>)
        unk = self.tokenizer.id_to_token(self.unk_id) if self.unk_id is not None else None
        tokens = [unk if i == self.unk_id and unk is not None else t for i, t in zip(ids, tokens)]
        return ([(t, -1) for t in self.prefix_tokens] + list(zip(tokens, words))
                + [(t, -1) for t in self.suffix_tokens])

    def unknown(self, document: Document) -> list[list[bool]]:
        """Per sentence, per word: every piece of it is the tokenizer's unknown token."""
        ids, _, words, _ = self._read(document)
        flags = [True] * document.num_tokens
        for i, w in zip(ids, words):
            if w >= 0 and i != self.unk_id:
                flags[w] = False
        out, at = [], 0
        for s in document.sentences:
            out.append(flags[at: at + len(s.tokens)])
            at += len(s.tokens)
        return out


SPECIAL = {"wordpiece": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
           "byte_bpe": ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}


def train_tokenizer(documents: list[Document], kind: str, size: int, seed_words: int = 2):
    """A tokenizer trained on the training split's text as the model reads it (``read_text``), as
    ``tokenizers`` trains BERT's and RoBERTa's: ``"wordpiece"`` (lower-cased, accents stripped,
    ``[CLS] ... [SEP]``) or ``"byte_bpe"`` (byte-level BPE, cased, ``<s> ... </s>``), of at most
    ``size`` tokens. Returns the
    ``tokenizers.Tokenizer``; its pad id is ``SPECIAL[kind]``'s padding token's."""
    import os

    # The trainer runs on a pool of threads sized once per process from RAYON_NUM_THREADS (else every
    # core): within this process's thread budget (hierattn.threads), which torch's count follows.
    os.environ.setdefault("RAYON_NUM_THREADS", str(max(1, torch.get_num_threads())))
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    specials = list(SPECIAL[kind])
    texts = (read_text(d)[0] for d in documents)  # the text the model will read
    if kind == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=size, min_frequency=seed_words, special_tokens=specials,
                                            show_progress=False)
        tokenizer.train_from_iterator(texts, trainer)
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    elif kind == "byte_bpe":
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=size, min_frequency=seed_words, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tokenizer.train_from_iterator(texts, trainer)
        tokenizer.post_processor = processors.RobertaProcessing(
            ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>")), trim_offsets=True,
            add_prefix_space=False)
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}")
    return tokenizer


def pad_id(tokenizer, kind: str) -> int:
    return tokenizer.token_to_id(SPECIAL[kind][0 if kind == "wordpiece" else 1])
