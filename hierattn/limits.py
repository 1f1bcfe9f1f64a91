"""What one request, upload, checkpoint or server may spend, so that no visitor's paste, upload or
checkpoint can pin the server's cores or memory. Each limit has a default, an environment
variable that changes it (read when the limit is checked, so a test or a server sets it at
start), and the sentence a refusal says: the limit's name, the amount, and how to raise it.
docs/RELIABILITY.md lists them ("Resources").
"""
from __future__ import annotations

import os
from dataclasses import dataclass


class LimitExceeded(ValueError):
    """An input beyond a limit; the message names the limit and how to raise it."""


@dataclass(frozen=True)
class Limit:
    what: str  # the thing limited, for a reader
    variable: str  # the environment variable that changes it
    default: int
    unit: str = ""  # " MB" for sizes

    @property
    def value(self) -> float:
        """The variable's value when it is a positive number (a fraction of a MB for sizes), else the default."""
        raw = os.environ.get(self.variable, "").strip()
        try:
            number = float(raw) if self.unit in (" MB", " KB") else int(raw)
        except ValueError:
            return self.default
        return number if number > 0 else self.default

    def exceeded(self, amount: float) -> bool:
        return amount > self.value

    def message(self, amount: float | str, subject: str = "", what: str | None = None) -> str:
        sized = self.unit in (" MB", " KB")
        shown = amount if isinstance(amount, str) else f"{amount:,.2f}" if sized else f"{amount:,}"
        return (f"{subject + ': ' if subject else ''}{what or self.what} is {shown}{self.unit}, over the limit of "
                f"{self.value:,}{self.unit} (set {self.variable} to raise it)")

    def beyond(self, subject: str = "") -> str:
        """The message for an amount known only to be past the limit (a stream cut off at it)."""
        return (f"{subject + ': ' if subject else ''}{self.what} is over the limit of {self.value:,}{self.unit} "
                f"(set {self.variable} to raise it)")

    def check(self, amount: float, subject: str = "") -> None:
        if self.exceeded(amount):
            raise LimitExceeded(self.message(amount, subject))


# Per request
CHARACTERS = Limit("the text's length in characters", "HIERATTN_MAX_CHARS", 1_000_000)
# Per upload (the Train page, the Evaluation page's own file)
# the file's size is also Streamlit's maxUploadSize in .streamlit/config.toml
UPLOAD_MB = Limit("the file's size", "HIERATTN_MAX_UPLOAD_MB", 50, " MB")
UPLOAD_ROWS = Limit("the number of rows", "HIERATTN_MAX_ROWS", 500_000)
UPLOAD_TEXT_MB = Limit("the decoded text's size", "HIERATTN_MAX_UPLOAD_TEXT_MB", 100, " MB")
# more distinct labels than this is almost surely a text column, not labels
CLASSES = Limit("the number of distinct labels", "HIERATTN_MAX_CLASSES", 100)
UPLOAD_COLUMNS = Limit("the number of columns", "HIERATTN_MAX_COLUMNS", 1_000)
UPLOAD_HEADER_KB = Limit("a table's header line", "HIERATTN_MAX_HEADER_KB", 64, " KB")
# Per checkpoint: checked from its small files (sizes on disk, config.json) before the weights or
# the vocabulary are read
JSON_MB = Limit("a JSON file's size", "HIERATTN_MAX_JSON_MB", 10, " MB")
VOCAB_MB = Limit("vocab.json's size", "HIERATTN_MAX_VOCAB_MB", 50, " MB")
WEIGHTS_MB = Limit("model.safetensors' size", "HIERATTN_MAX_WEIGHTS_MB", 500, " MB")
# a folder's tokenizer reads a paste in a child process of this address space and time
# (data/tokenizer_process.py): an unforeseen component aborts or stalls the child, never the server
TOKENIZER_MB = Limit("the tokenizer's memory", "HIERATTN_TOKENIZER_MB", 1024, " MB")
TOKENIZER_SECONDS = Limit("the tokenizer's time per text in seconds", "HIERATTN_TOKENIZER_SECONDS", 10)
# the tensor names and shapes before the weights (BERT-base: 16 KB); read before any tensor is
WEIGHTS_HEADER_MB = Limit("model.safetensors' header", "HIERATTN_MAX_WEIGHTS_HEADER_MB", 4, " MB")
# a Hugging Face config.json's numbers: transformers builds tables of num_labels or positions entries
# from them before any weight is read (a 200-byte file asked for 15 million labels)
CONFIG_NUMBER = Limit("a number in config.json", "HIERATTN_MAX_CONFIG_NUMBER", 1_000_000)
VOCABULARY = Limit("the vocabulary (words)", "HIERATTN_MAX_VOCAB", 500_000)
WIDTH = Limit("a layer's size", "HIERATTN_MAX_WIDTH", 4096)
WORDS_READ = Limit("the words read per document (sentences x words per sentence)", "HIERATTN_MAX_WORDS_READ",
                   4_000)
PARAMETERS = Limit("the model's parameters and buffers", "HIERATTN_MAX_PARAMETERS", 125_000_000)
# Every attention map, head, branch and level of one explanation of a document at the model's caps:
# 4 bytes a cell (64 MB at the default); a forward pass peaks at about three times that.
EXPLANATION_CELLS = Limit("the attention cells one explanation holds (every map, head, branch and level)",
                          "HIERATTN_MAX_EXPLANATION_CELLS", 1 << 24)
# Per server
# explanations computed at once, by their predicted peak (3 x 4 bytes a cell at the model's caps): the
# rest wait their turn in order (30 sessions pasting into a transformer hit 8 GB allocation failures)
EXPLAINING_MB = Limit("the memory of the explanations computed at once", "HIERATTN_EXPLAINING_MB", 1024, " MB")
PAGE_RUNS = Limit("the page runs one server process computes at once", "HIERATTN_PAGE_RUNS", 2)
ANALYSES_PER_VISITOR = Limit("the background analyses one visitor runs at once", "HIERATTN_ANALYSES_PER_VISITOR",
                             1)  # default: half the cores, at least one (app/tasks.py)
MODEL_MEMORY_MB = Limit("the memory of the models kept loaded", "HIERATTN_MODEL_MEMORY_MB", 2048, " MB")
EXPLANATION_MEMORY_MB = Limit("the memory of the explanations kept for reuse", "HIERATTN_EXPLANATION_MEMORY_MB", 256,
                              " MB")
# Runs started from the Train page (the command line has none of these)
RUNS_PER_VISITOR = Limit("the runs one visitor trains at once", "HIERATTN_RUNS_PER_VISITOR", 1)
# checkpoints one visitor's runs keep on the server (each in every visitor's pickers; one 20 MB upload wrote 51 MB)
CHECKPOINTS_PER_VISITOR = Limit("the checkpoints one visitor keeps", "HIERATTN_CHECKPOINTS_PER_VISITOR", 5)
# every visitor together, whatever identity each presents (app/app_store.py): a client that sends no
# cookie is a new visitor per connection, so the per-visitor cap alone bounds nothing
VISITOR_CHECKPOINTS = Limit("the checkpoints all visitors keep", "HIERATTN_VISITOR_CHECKPOINTS", 30)
VISITOR_CHECKPOINTS_MB = Limit("the size of the checkpoints all visitors keep", "HIERATTN_VISITOR_CHECKPOINTS_MB",
                               1024, " MB")
RUN_SECONDS = Limit("a run's time in seconds", "HIERATTN_RUN_SECONDS", 7_200)
RUN_AWAY_SECONDS = Limit("the seconds a run goes on after its visitor left", "HIERATTN_RUN_AWAY_SECONDS", 600)
# Pasted documents kept by content for links and refreshes (hierattn/app/documents.py)
KEPT_DOCUMENTS = Limit("the pasted documents kept for links", "HIERATTN_KEPT_DOCUMENTS", 2_000)
KEPT_DOCUMENTS_MB = Limit("the pasted documents kept for links", "HIERATTN_KEPT_DOCUMENTS_MB", 64, " MB")
KEPT_DOCUMENT_KB = Limit("a pasted document kept for links", "HIERATTN_KEPT_DOCUMENT_KB", 512)
KEPT_DOCUMENT_DAYS = Limit("the days a pasted document is kept for links", "HIERATTN_KEPT_DOCUMENT_DAYS", 30)
# a document pasted or opened within this many minutes is never let go for another (a lecture's links
# hold whatever any number of identities paste meanwhile): when every kept one is that recent, a new
# paste is not kept, and its link says so
KEPT_DOCUMENT_HOLD_MINUTES = Limit("the minutes a pasted document is kept whatever is pasted after it",
                                   "HIERATTN_KEPT_DOCUMENT_HOLD_MINUTES", 180)



def words_read(max_sentences: int, max_words: int, max_tokens: int | None = None) -> int:
    """The most words a document is read as, under a checkpoint's text caps."""
    product = int(max_sentences) * int(max_words)
    return min(product, int(max_tokens)) if max_tokens else product


def rough_nbytes(value) -> int:
    """About what ``value`` holds in memory, for a remembered result's share of an explanation's
    budget: arrays, tensors and anything else that says its ``nbytes`` (a figure ``viz`` built) by
    that, text by its length, a table by its cells (8 bytes each, a number or a text's pointer: the
    tables a page keeps are numbers beside a few names, and pandas' own deep count took 1.1-1.6 ms
    of each), another figure (anything with ``to_plotly_json``) by its description, containers by
    what they hold."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(getattr(value, "nbytes", None), int):  # numpy arrays, torch tensors
        return value.nbytes
    if hasattr(value, "memory_usage"):  # a pandas table (a column or an index says its nbytes, above)
        rows, columns = value.shape
        return 64 * columns + 8 * rows * columns
    if hasattr(value, "to_plotly_json"):
        return rough_nbytes(value.to_plotly_json())
    if isinstance(value, dict):
        return 64 + sum(rough_nbytes(k) + rough_nbytes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 56 + sum(rough_nbytes(v) for v in value)
    return 32
