"""Streaming preprocessing: a corpus of any size tokenised once into memory-mapped arrays.

``build_cache(corpus, text_config)`` reads the corpus record by record, hands chunks of
``chunk_docs`` texts to worker processes, each of which runs spaCy's ``nlp.pipe`` and our
normalisation (``text.tokenize_many``, the same code the app explains with), and appends the
result to flat binary files. At most ``2 x processes`` chunks are in flight, so memory stays flat
whatever the size of the file. spaCy's own ``n_process`` would parallelise only its tokenizer;
our normalisation runs after it in Python and is the larger share of the work, so each worker
process runs the whole pipeline on its chunk.

Tokens are stored as ids into a corpus-wide token table (every normalised form seen, in order of
first appearance) with per-part counts, so one cache serves every vocabulary size and minimum
count: a model's vocabulary is a lookup array from table ids to its own ids, applied per batch.

Layout of a cache directory (``HIERATTN_CACHE``, default ``~/.cache/hierattn``, then
``<corpus>-<key>``, the key a hash of the files, their sizes and modification times, the reading
options and the ``TextConfig``; a changed file or setting gets a new cache):

- ``tokens.int32``: every token of every document, in order;
- ``sentence_lengths.int32`` / ``sentence_offsets.int64``: tokens per sentence and where each starts;
- ``document_sentences.int32`` / ``document_offsets.int64``: sentences per document, likewise;
- ``labels.int32``: label ids (sorted label order, see ``corpora.label_order``);
- ``table.json``: the token table; ``counts-<part>.int64``: each token's count in that part;
- ``meta.json``: parts (document ranges), labels, settings, statistics; written last, so a cache
  without it is incomplete and is rebuilt. The directory is renamed into place when complete.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import resource
import shutil
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hierattn.data.corpora import Corpus, label_names, label_order
from hierattn.data.text import PAD, UNK, TextConfig, Vocab

CACHE_VERSION = 1
CHUNK_DOCS = 2000
OFFSET_BLOCK = 1 << 20  # lengths summed into offsets this many at a time


def cache_root() -> Path:
    return Path(os.environ.get("HIERATTN_CACHE") or Path.home() / ".cache" / "hierattn")


def cache_key(corpus: Corpus, text_config: TextConfig) -> str:
    settings = {"version": CACHE_VERSION, "corpus": corpus.settings(), "text": asdict(text_config)}
    return hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class CacheReport:
    """What one ``build_cache`` call did: built (with its speed) or reused."""

    path: Path
    reused: bool
    documents: int
    seconds: float
    processes: int

    @property
    def documents_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds else 0.0


def _tokenize_chunk(job: tuple[list[str], TextConfig]) -> tuple[str, bytes, bytes]:
    """In a worker: a chunk of texts -> (every normalised token joined by spaces, tokens per
    sentence, sentences per document). Normalised tokens never contain whitespace, and one joined
    string crosses the process boundary far faster than millions of small ones."""
    from hierattn.data.text import tokenize_many

    texts, config = job
    norms, sentence_lengths, document_sentences = [], [], []
    for document in tokenize_many(texts, config):
        document_sentences.append(len(document.sentences))
        for sentence in document.sentences:
            sentence_lengths.append(len(sentence.tokens))
            norms.extend(t.norm for t in sentence.tokens)
    return (" ".join(norms), np.asarray(sentence_lengths, np.int32).tobytes(),
            np.asarray(document_sentences, np.int32).tobytes())


def _chunks(corpus: Corpus, chunk_docs: int, labels: dict[str, int], part_sizes: dict[str, int]):
    """(texts, label ids) chunks over every part in turn, counting documents per part."""
    for part in corpus.parts:
        part_sizes[part] = 0
        texts, ids = [], []
        for text, label in corpus.records(part):
            texts.append(text)
            ids.append(labels.setdefault(label, len(labels)))
            if len(texts) == chunk_docs:
                part_sizes[part] += len(texts)
                yield part, texts, ids
                texts, ids = [], []
        if texts:
            part_sizes[part] += len(texts)
            yield part, texts, ids


def build_cache(corpus: Corpus, text_config: TextConfig, processes: int | None = None,
                chunk_docs: int = CHUNK_DOCS, root: Path | None = None,
                progress: Callable[[int], None] | None = None) -> CacheReport:
    """Tokenise ``corpus`` into a cache directory, or reuse the one its settings already made.
    ``processes``: worker processes (default: every CPU; 1 runs in this process).
    ``progress(documents done)`` is called after each chunk."""
    started = time.perf_counter()
    root = Path(root or cache_root())
    final = root / f"{corpus.name}-{cache_key(corpus, text_config)}"
    if (final / "meta.json").is_file():
        meta = json.loads((final / "meta.json").read_text())
        return CacheReport(final, True, meta["documents"], time.perf_counter() - started, 0)
    processes = processes or os.cpu_count() or 1
    root.mkdir(parents=True, exist_ok=True)
    work = root / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    files = {name: open(work / name, "wb") for name in
             ("tokens.int32", "sentence_lengths.int32", "document_sentences.int32", "labels.int32")}
    table: dict[str, int] = {}
    counts: dict[str, np.ndarray] = {}
    labels: dict[str, int] = {}
    part_sizes: dict[str, int] = {}
    done = 0

    def write(part: str, ids: list[int], result: tuple[str, bytes, bytes]) -> None:
        nonlocal done
        joined, sentence_lengths, document_sentences = result
        tokens = np.fromiter((table.setdefault(w, len(table)) for w in joined.split(" ") if w), np.int32)
        files["tokens.int32"].write(tokens.tobytes())
        files["sentence_lengths.int32"].write(sentence_lengths)
        files["document_sentences.int32"].write(document_sentences)
        files["labels.int32"].write(np.asarray(ids, np.int32).tobytes())
        seen = np.bincount(tokens, minlength=len(table))
        have = counts.get(part, np.zeros(0, np.int64))
        if len(have) < len(seen):
            have = np.concatenate([have, np.zeros(len(seen) - len(have), np.int64)])
        have[: len(seen)] += seen
        counts[part] = have
        done += len(ids)
        if progress:
            progress(done)

    try:
        jobs = _chunks(corpus, chunk_docs, labels, part_sizes)
        if processes == 1:
            for part, texts, ids in jobs:
                write(part, ids, _tokenize_chunk((texts, text_config)))
        else:
            context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                                  else "spawn")
            with context.Pool(processes) as pool:
                pending: deque = deque()
                for part, texts, ids in jobs:  # a bounded window: the corpus is never read ahead
                    pending.append((part, ids, pool.apply_async(_tokenize_chunk, ((texts, text_config),))))
                    if len(pending) >= 2 * processes:
                        part_, ids_, result = pending.popleft()
                        write(part_, ids_, result.get())
                while pending:
                    part_, ids_, result = pending.popleft()
                    write(part_, ids_, result.get())
        for f in files.values():
            f.close()
        _finish(work, corpus, text_config, table, counts, labels, part_sizes, done)
        if final.exists() and not (final / "meta.json").is_file():
            shutil.rmtree(final)  # damaged (its meta.json gone): never read, so replaced
        try:
            os.rename(work, final)
        except OSError:  # another process finished the same cache first: theirs is as good
            if not (final / "meta.json").is_file():
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        for f in files.values():
            f.close()
        shutil.rmtree(work, ignore_errors=True)
        raise
    return CacheReport(final, False, done, time.perf_counter() - started, processes)


def _finish(work: Path, corpus: Corpus, text_config: TextConfig, table, counts, labels, part_sizes, documents):
    """Offsets, label order, the table and the counts; ``meta.json`` last."""
    for lengths, offsets in (("sentence_lengths.int32", "sentence_offsets.int64"),
                             ("document_sentences.int32", "document_offsets.int64")):
        count = os.path.getsize(work / lengths) // 4
        n = np.memmap(work / lengths, np.int32, mode="r") if count else np.zeros(0, np.int32)
        with open(work / offsets, "wb") as f:  # a running sum in blocks: memory stays flat for any corpus
            total = np.zeros(1, np.int64)
            f.write(total.tobytes())
            for first in range(0, count, OFFSET_BLOCK):
                block = np.cumsum(n[first: first + OFFSET_BLOCK], dtype=np.int64) + total[-1]
                f.write(block.tobytes())
                total = block[-1:]
        del n
    ordered = label_order(corpus, list(labels))
    if ordered != list(labels):  # ids were given in order of first appearance; renumber to the sorted order
        renumber = np.zeros(len(labels), np.int32)
        for new, label in enumerate(ordered):
            renumber[labels[label]] = new
        renumber[np.fromfile(work / "labels.int32", np.int32)].tofile(work / "labels.int32")
    (work / "table.json").write_text(json.dumps(list(table), ensure_ascii=False))
    for part, c in counts.items():
        np.concatenate([c, np.zeros(len(table) - len(c), np.int64)]).tofile(work / f"counts-{part}.int64")
    start, parts = 0, {}
    for part, size in part_sizes.items():
        parts[part] = [start, start + size]
        start += size
    meta = {"version": CACHE_VERSION, "name": corpus.name, "documents": documents, "parts": parts,
            "labels": ordered, "label_names": label_names(corpus, ordered), "text": asdict(text_config),
            "corpus": corpus.settings(), "tokens": int(os.path.getsize(work / "tokens.int32") // 4),
            "table_size": len(table)}
    (work / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))


def peak_memory_mb() -> dict[str, float]:
    """Peak resident memory of this process and of its largest finished child (Linux: KB units).

    This process's own peak comes from ``VmHWM`` where Linux has it: ``ru_maxrss`` survives
    ``exec``, so a process started by a large parent (the bench, 2 GB) reported the parent's peak."""
    scale = 1 / 1024 if os.uname().sysname == "Linux" else 1 / 2**20
    main = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                main = int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return {"main": main, "largest_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale}


class CachedCorpus:
    """A built cache, read lazily: the arrays are memory-mapped, a batch reads only its documents."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{self.path} is not a complete corpus cache (no meta.json)")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("version") != CACHE_VERSION:
            raise ValueError(f"{self.path} was written by another version of the cache format")
        mapped = lambda name, dtype: np.memmap(self.path / name, dtype=dtype, mode="r")  # noqa: E731
        self.tokens = mapped("tokens.int32", np.int32)
        self.sentence_offsets = mapped("sentence_offsets.int64", np.int64)
        self.document_offsets = mapped("document_offsets.int64", np.int64)
        self.labels = mapped("labels.int32", np.int32)
        self.label_names: list[str] = self.meta["label_names"]
        self.text_config = TextConfig(**self.meta["text"])
        self._table: list[str] | None = None
        self.report: CacheReport | None = None  # how it was built or reused, when this process did it

    def __len__(self) -> int:
        return self.meta["documents"]

    def part(self, name: str) -> range:
        start, stop = self.meta["parts"][name]
        return range(start, stop)

    @property
    def parts(self) -> list[str]:
        return list(self.meta["parts"])

    @property
    def table(self) -> list[str]:
        if self._table is None:
            self._table = json.loads((self.path / "table.json").read_text())
        return self._table

    def counts(self, part: str) -> np.ndarray:
        path = self.path / f"counts-{part}.int64"
        return np.fromfile(path, np.int64) if path.is_file() else np.zeros(len(self.table), np.int64)

    def vocabulary(self, parts: list[str], min_freq: int, max_size: int | None) -> tuple[Vocab, np.ndarray]:
        """The vocabulary ``Vocab.build`` would make from these parts' documents (descending count,
        ties alphabetical), and the lookup array from table ids to its ids (``<unk>`` for the rest).

        With a part that is only partly training data (one file split 80/10/10), pass its counts
        through ``counts_of``; see ``distributed.prepare_corpus``."""
        counts = sum(self.counts(p) for p in parts)
        return self.vocabulary_from_counts(counts, min_freq, max_size)

    def vocabulary_from_counts(self, counts: np.ndarray, min_freq: int, max_size: int | None):
        table = self.table
        kept = [i for i in np.flatnonzero(counts >= min_freq)]
        kept.sort(key=lambda i: (-counts[i], table[i]))
        kept = kept[:max_size] if max_size else kept
        vocab = Vocab([PAD, UNK] + [table[i] for i in kept])
        lookup = np.full(len(table), Vocab.unk_id, np.int64)
        lookup[np.asarray(kept, np.int64)] = np.arange(2, 2 + len(kept))
        return vocab, lookup

    def counts_of(self, documents) -> np.ndarray:
        """Token counts over some documents, read from the memory map in blocks of documents."""
        chosen = np.zeros(len(self), bool)
        chosen[np.asarray(documents, np.int64)] = True
        counts = np.zeros(len(self.table), np.int64)
        lengths = np.diff(self.sentence_offsets)  # tokens per sentence
        for first in range(0, len(self), 100_000):
            last = min(first + 100_000, len(self))
            s0, s1 = int(self.document_offsets[first]), int(self.document_offsets[last])
            per_sentence = np.repeat(chosen[first:last], np.diff(self.document_offsets[first: last + 1]))
            keep = np.repeat(per_sentence, lengths[s0:s1])
            tokens = np.asarray(self.tokens[self.sentence_offsets[s0]: self.sentence_offsets[s1]])
            counts += np.bincount(tokens[keep], minlength=len(counts))
        return counts

    def sentences(self, i: int) -> list[np.ndarray]:
        """Document ``i``'s sentences as arrays of table ids."""
        s0, s1 = int(self.document_offsets[i]), int(self.document_offsets[i + 1])
        bounds = self.sentence_offsets[s0: s1 + 1]
        return [np.asarray(self.tokens[bounds[j]: bounds[j + 1]]) for j in range(s1 - s0)]

    def words(self, i: int) -> list[list[str]]:
        """Document ``i`` as normalised words per sentence (what the model reads)."""
        table = self.table
        return [[table[t] for t in sentence] for sentence in self.sentences(i)]

    def batch(self, indices, lookup: np.ndarray):
        """A padded ``data.Batch`` of these documents, words mapped through ``lookup``."""
        import torch

        from hierattn.contract import Batch

        documents = [[lookup[s] for s in self.sentences(int(i))] for i in indices]
        num_sent = max(1, max((len(d) for d in documents), default=1))
        num_words = max(1, max((len(s) for d in documents for s in d), default=1))
        ids = np.zeros((len(documents), num_sent, num_words), np.int64)
        for b, document in enumerate(documents):
            for s, sentence in enumerate(document):
                ids[b, s, : len(sentence)] = sentence
        word_ids = torch.from_numpy(ids)
        mask = word_ids != 0
        labels = torch.from_numpy(np.asarray(self.labels[np.asarray(indices, np.int64)], np.int64))
        return Batch(word_ids, mask, mask.any(-1), labels)
