"""What a tokenizer.json may contain before it is read: the components the transformers library's
own families use, with bounded work per character.

``Tokenizer.encode`` holds the interpreter lock, so a tokenizer that does unbounded work freezes the
whole server, every visitor's page with it: a Split regex that backtracks (``[A-Za-z .!?]*\\d``
before BERT's pre-tokenizer held the lock 65 s on one 162,000-character paste), a Replace
normalizer that grows each "q" into 10,000 characters (25 s and 1.5 GB for 15,000 characters).
So a regular expression is read only when it is one a known family ships (GPT-2's and RoBERTa's
byte-level split, Llama 3's and cl100k's, the runs of spaces that T5 and ALBERT fold), and a
replacement adds at most ``MAX_REPLACEMENT`` characters. Everything else is refused, naming what.
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


def tokenizer_problem(spec) -> str | None:
    """Why a tokenizer.json (parsed) is not read, or None."""
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        return "tokenizer.json is not a tokenizer (no model)"
    return (_component_problem("tokenizer.json's normalizer", spec.get("normalizer"), NORMALIZERS)
            or _component_problem("tokenizer.json's pre-tokenizer", spec.get("pre_tokenizer"), PRE_TOKENIZERS)
            or _component_problem("tokenizer.json's model", spec["model"], MODELS)
            or _component_problem("tokenizer.json's post-processor", spec.get("post_processor"), POST_PROCESSORS)
            or _component_problem("tokenizer.json's decoder", spec.get("decoder"), DECODERS))


def file_problem(path) -> str | None:
    """``tokenizer_problem`` of a tokenizer.json file (read within ``limits.VOCAB_MB``); None when it
    is missing or unreadable, which the reader says."""
    import json

    from hierattn.data.files import read_bytes
    from hierattn.limits import VOCAB_MB, LimitExceeded

    try:
        return tokenizer_problem(json.loads(read_bytes(path, VOCAB_MB).decode("utf-8")))
    except (OSError, ValueError, LimitExceeded, RecursionError):
        return None
