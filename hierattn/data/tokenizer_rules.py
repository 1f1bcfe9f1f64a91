"""What a tokenizer.json may contain before it is read: the components the transformers library's
own families use, with bounded work per character.

``Tokenizer.encode`` holds the interpreter lock, so a tokenizer that does unbounded work freezes the
whole server, every visitor's page with it: a Split regex that backtracks (``[A-Za-z .!?]*\\d``
before BERT's pre-tokenizer held the lock 65 s on one 162,000-character paste), a Replace
normalizer that grows each "q" into 10,000 characters (25 s and 1.5 GB for 15,000 characters).
So a regular expression is read only when it is one a known family ships (GPT-2's and RoBERTa's
byte-level split, Llama 3's and cl100k's, the runs of spaces that T5 and ALBERT fold), and a
replacement adds at most ``MAX_REPLACEMENT`` characters. Everything else is refused, naming what.

Rules per component were beaten by a chain: fifteen Replaces of "qq" by sixteen "q", each within the
rule, grow a text 8^15-fold (a 23-character paste aborted the server asking for 4 GB). So the
normalizers' worst-case growth is bounded as a product (:func:`normalizer_growth`, at most
``MAX_GROWTH``), counting what a folder's author chooses (Replace and Prepend); the fixed Unicode
normalizers (NFKC at most 18 characters for one, BERT's spaces around CJK 3) are the library's own
and bounded by Unicode. WordPiece's ``max_input_chars_per_word`` above the library's default (100)
makes its work grow with the cube of a word's length (10^9: 138 s for a 51 KB paste), and a token id
at or beyond the model's embedding rows fails inside the model: both are refused at open.
"""
from __future__ import annotations

NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "Nmt", "Strip", "StripAccents",
               "Prepend", "Replace", "Precompiled", "ByteLevel", "Sequence"}
PRE_TOKENIZERS = {"BertPreTokenizer", "ByteLevel", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits",
                  "Metaspace", "CharDelimiterSplit", "UnicodeScripts", "Split", "Sequence"}
MODELS = {"WordPiece", "BPE", "Unigram", "WordLevel"}
POST_PROCESSORS = {"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"}
DECODERS = {"WordPiece", "ByteLevel", "Metaspace", "BPEDecoder", "CTC", "Replace", "Fuse", "Strip", "ByteFallback",
            "Sequence"}
KNOWN_PATTERNS = {  # regular expressions the families ship, each linear on any text
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",  # GPT-2, RoBERTa
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+",  # Llama 3, cl100k
    r" {2,}", r"\s+",  # runs of spaces folded (T5, ALBERT)
}
MAX_REPLACEMENT = 16  # characters a Replace or Prepend may put in
MAX_LITERAL = 256  # characters of a literal pattern
MAX_GROWTH = 4.0  # how many times longer the normalizers may make a text, at worst
WORDPIECE_WORD = 100  # the tokenizers library's default max_input_chars_per_word
SHORTEST_MATCH = {r" {2,}": 2}  # the known replace patterns' shortest match; any other at least 1


def _pattern_problem(where: str, pattern) -> str | None:
    if not isinstance(pattern, dict) or len(pattern) != 1:
        return f"{where}: its pattern is not a String or a Regex"
    (kind, value), = pattern.items()
    if kind == "String" and isinstance(value, str) and len(value) <= MAX_LITERAL:
        return None
    if kind == "Regex" and value in KNOWN_PATTERNS:
        return None
    return (f"{where}: its {kind} pattern {str(value)[:60]!r} is not one a known tokenizer family uses (a regular "
            "expression can backtrack for minutes on one paste, holding the whole server)")


def _component_problem(where: str, component, allowed: set[str], depth: int = 0) -> str | None:
    if component is None:
        return None
    if not isinstance(component, dict) or component.get("type") not in allowed:
        kind = component.get("type") if isinstance(component, dict) else type(component).__name__
        return f"{where} of type {str(kind)[:40]!r} is not one hierattn reads ({', '.join(sorted(allowed))})"
    kind = component["type"]
    if kind == "Sequence":
        parts = next((component[k] for k in ("normalizers", "pretokenizers", "processors", "decoders")
                      if k in component), None)
        if not isinstance(parts, list) or depth > 3 or len(parts) > 16:
            return f"{where}: a Sequence of at most 16 parts, 3 deep, is read"
        for part in parts:
            if problem := _component_problem(where, part, allowed, depth + 1):
                return problem
    if kind in ("Replace", "Split") and (problem := _pattern_problem(f"{where} {kind}", component.get("pattern"))):
        return problem
    for key in ("content", "prepend"):
        if kind in ("Replace", "Prepend") and len(str(component.get(key, ""))) > MAX_REPLACEMENT:
            return (f"{where} {kind}: it puts in {len(str(component.get(key)))} characters for each match, more "
                    f"than {MAX_REPLACEMENT} (a text can grow without bound)")
    return None


def normalizer_growth(component) -> float:
    """At most how many times longer a (rule-abiding) normalizer makes a text: a Replace turns each
    match (its pattern's shortest) into its content, a Sequence multiplies its parts' growth, and a
    Prepend adds characters once, counted as a factor of 2 for a one-character text."""
    if not isinstance(component, dict):
        return 1.0
    kind = component.get("type")
    if kind == "Sequence":
        growth = 1.0
        for part in component.get("normalizers") or []:
            growth *= normalizer_growth(part)
        return growth
    if kind == "Replace":
        (pattern_kind, pattern), = component["pattern"].items()
        shortest = max(1, len(pattern)) if pattern_kind == "String" else SHORTEST_MATCH.get(pattern, 1)
        return max(1.0, len(str(component.get("content", ""))) / shortest)
    if kind == "Prepend":
        return 1.0 + len(str(component.get("prepend", "")))
    return 1.0


def token_ids(spec: dict) -> list[int]:
    """Every token id a tokenizer.json can emit: its model's vocabulary, its added tokens, and the
    special tokens its post-processor puts around a text."""
    model, ids = spec["model"], []
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        ids += [v for v in vocab.values() if type(v) is int]
    elif isinstance(vocab, list):  # Unigram: [piece, score] rows, the id is the row
        ids.append(len(vocab) - 1)
    ids += [t["id"] for t in spec.get("added_tokens") or [] if isinstance(t, dict) and type(t.get("id")) is int]
    stack = [spec.get("post_processor")]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("ids"), list):
                ids += [i for i in value["ids"] if type(i) is int]
            stack.extend(value.values())
        elif isinstance(value, list):
            if len(value) == 2 and isinstance(value[0], str) and type(value[1]) is int:  # BertProcessing's sep/cls
                ids.append(value[1])
            else:
                stack.extend(value)
    return ids


def tokenizer_problem(spec, vocab_size: int | None = None) -> str | None:
    """Why a tokenizer.json (parsed) is not read, or None; ``vocab_size``: the model's embedding
    rows, which every id it can emit must be below."""
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        return "tokenizer.json is not a tokenizer (no model)"
    problem = (_component_problem("tokenizer.json's normalizer", spec.get("normalizer"), NORMALIZERS)
               or _component_problem("tokenizer.json's pre-tokenizer", spec.get("pre_tokenizer"), PRE_TOKENIZERS)
               or _component_problem("tokenizer.json's model", spec["model"], MODELS)
               or _component_problem("tokenizer.json's post-processor", spec.get("post_processor"), POST_PROCESSORS)
               or _component_problem("tokenizer.json's decoder", spec.get("decoder"), DECODERS))
    if problem:
        return problem
    if (growth := normalizer_growth(spec.get("normalizer"))) > MAX_GROWTH:
        return (f"tokenizer.json's normalizer can make a text {growth:,.0f} times longer, more than "
                f"{MAX_GROWTH:g} (its Replace and Prepend steps multiply: a few characters could ask for gigabytes)")
    model = spec["model"]
    per_word = model.get("max_input_chars_per_word")
    if model.get("type") == "WordPiece" and per_word is not None and (
            type(per_word) is not int or per_word > WORDPIECE_WORD):
        return (f"tokenizer.json's WordPiece reads words of up to {str(per_word)[:20]} characters, more than the "
                f"library's default {WORDPIECE_WORD} (its work grows with the cube of a word's length)")
    if vocab_size is not None:
        ids = token_ids(spec)
        if ids and (max(ids) >= vocab_size or min(ids) < 0):
            wrong = max(ids) if max(ids) >= vocab_size else min(ids)
            return (f"tokenizer.json emits token id {wrong}, outside the model's {vocab_size} embedding rows "
                    "(config.json's vocab_size)")
    return None


def file_problem(path, vocab_size: int | None = None) -> str | None:
    """``tokenizer_problem`` of a tokenizer.json file (read within ``limits.VOCAB_MB``); None when it
    is missing or unreadable, which the reader says."""
    import json

    from hierattn.data.files import read_bytes
    from hierattn.limits import VOCAB_MB, LimitExceeded

    try:
        return tokenizer_problem(json.loads(read_bytes(path, VOCAB_MB).decode("utf-8")), vocab_size)
    except (OSError, ValueError, LimitExceeded, RecursionError):
        return None
