"""Hugging Face transformer classifiers (BERT, RoBERTa, DistilBERT: any
``AutoModelForSequenceClassification`` whose attention runs through transformers' attention
interface), read into the contract: subword tokens in (``Batch.pieces``), logits and named-axis maps
out, the same maps at the levels every other model has.

Maps, for a document of T tokens (special tokens included), W words, S sentences, L layers, H heads:
- ``subword.self`` (batch, layer, head, query, key), level ``subword``: every layer's attention as the
  model computes it, over its own tokens. The interventions act here (site ``subword.self``, every
  layer), through the attention function hierattn registers with transformers (``library_attention``).
- ``word.self`` and ``sentence.self`` (batch, layer, head, query, key): the same attention between
  our words (reading order) and sentences. The rule (Clark et al. 2019, "What does BERT look at?",
  section 4.1): attention *to* a word is the sum over its pieces (a word split in three receives what
  its three pieces receive, neither thrice nor a third), attention *from* a word is the mean over
  its pieces (each piece's row is a distribution, so their mean is one). Attention to special
  tokens is left out and each row renormalised to sum to 1; what left is reported apart by the
  analyses (``analysis.heads``), since it is most of many heads' mass (Clark et al., section 3).
- ``word.first_token`` and ``sentence.first_token`` (batch, head, key): the last layer's row of the
  first token (``[CLS]``, ``<s>``), whose final state is what the classification head reads, over
  words and sentences by the same rule: what the app paints on the text, as it paints target
  attention.
The word and sentence maps name ``subword.self`` as their ``source``: an intervention on either level
acts on the token attention they aggregate (the model computes no other).

Built here (the Train page, ``train --model transformer``): a small encoder from scratch, ``family``
its transformers ``model_type`` (``transformer_config``), reading the pieces of a tokenizer trained on
its training split (``vocabulary``). Opened from a folder ``save_pretrained`` wrote
(``huggingface_folder``): any model type transformers knows, built with the library's own class
(transformers imported then), and trained further on a data set of its own labels (``relabel``).
"""
from __future__ import annotations

import torch
from torch import nn

from hierattn.contract import Batch, Pieces
from hierattn.data.subwords import SubwordVocab
from hierattn.models.common import classification_output, wants_document_vectors
from hierattn.models.huggingface_folder import HuggingFaceFolder
from hierattn.models.library_attention import IMPLEMENTATION, register
from hierattn.models.library_limits import fitting_window, held_cells
from hierattn.models.spec import Knob, ModelSpec
from hierattn.models.subword_maps import layer_stack, maps
from hierattn.models.transformer_config import FAMILIES, TransformerConfig, config_from_hf, hf_config


class TransformerClassifier(nn.Module):
    """A transformers sequence classifier (``self.encoder``) reading ``Batch.pieces``."""

    def __init__(self, config: TransformerConfig, encoder: nn.Module | None = None):
        super().__init__()
        from transformers import AutoModelForSequenceClassification

        register()
        self.config = config
        self.encoder = encoder if encoder is not None else AutoModelForSequenceClassification.from_config(
            hf_config(config), attn_implementation=IMPLEMENTATION)
        embeddings = getattr(getattr(self.encoder, self.encoder.base_model_prefix, self.encoder), "embeddings", None)
        # RoBERTa's positions start after its padding id: its table holds that many fewer tokens.
        offset = getattr(embeddings, "padding_idx", None)
        positions = getattr(self.encoder.config, "max_position_embeddings", None) or config.max_positions
        self.model_window = positions - (offset + 1 if isinstance(offset, int) else 0)  # what its positions hold
        summary = config_from_hf(self.encoder.config)
        # the tokens read at once: the model's window, or fewer where one explanation of a full window
        # would hold more attention than the server's limit (a 4,096-token model cost 49 s and 4 GB
        # before the limit refused its maps); the sidebar says so
        self.window = min(self.model_window, fitting_window(summary.layers, summary.heads))

    @property
    def embedding(self) -> nn.Module:
        """The token embedding table (gradient x input reads its lookups)."""
        return self.encoder.get_input_embeddings()

    def attention_cells(self, sentences: int, words: int) -> int:
        """The attention cells one explanation holds at a full window (``library_limits.held_cells``;
        ``budget`` reads this)."""
        summary = config_from_hf(self.encoder.config)
        # a window's pieces hold at most as many sentences as pieces (our caps are set past the window)
        return held_cells(summary.layers, summary.heads, self.window, min(sentences, self.window))

    def forward_cells(self, sentences: int, words: int) -> int:
        """A full window's pass at its peak: the float32 stack of every layer's map, then what is held."""
        summary = config_from_hf(self.encoder.config)
        return summary.layers * summary.heads * self.window ** 2 + self.attention_cells(sentences, words)

    def pieces_from_words(self, batch: Batch) -> Pieces:
        """A batch without pieces (the budget's and the loader's probes): each real word read as one
        token, its word id, no special tokens, cut at the window."""
        b, s, w = batch.word_ids.shape
        flat = batch.word_mask.view(b, s * w)
        order = torch.sort((~flat).to(torch.int8), dim=1, stable=True).indices
        length = max(1, min(int(flat.sum(1).max()), self.window))
        ids = batch.word_ids.view(b, s * w).gather(1, order[:, :length]).clamp(max=self.config.vocab_size - 1)
        mask = flat.gather(1, order[:, :length])
        word = torch.where(mask, torch.arange(length, device=ids.device).expand(b, length), -1)
        return Pieces(ids, mask, word)

    def forward(self, batch: Batch, return_attentions: bool = True):
        pieces, word_mask = batch.pieces, batch.word_mask
        if pieces is None:
            pieces = self.pieces_from_words(batch)
            flat = word_mask.flatten(1)
            word_mask = (flat & (flat.cumsum(1) <= pieces.ids.shape[1])).view_as(word_mask)  # words in the window
        ids, mask, attentions = pieces.ids, pieces.mask.long(), {}
        hidden = wants_document_vectors()  # the last layer's states, for the document vector only
        if return_attentions and not torch.is_grad_enabled():  # each layer written into one stack
            with layer_stack(self.encoder.config.num_hidden_layers) as stack:
                out = self.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=hidden)
            attentions = maps(stack.full(), pieces, word_mask)
        else:  # a gradient through the maps: transformers' own list, stacked
            out = self.encoder(input_ids=ids, attention_mask=mask, output_attentions=return_attentions,
                               output_hidden_states=hidden)
            if return_attentions:
                layers, out.attentions = out.attentions, None
                attentions = maps(torch.stack(layers, 1), pieces, word_mask)
        document = None
        if hidden:  # (batch, tokens, features) -> the mean over the tokens read, special ones included
            last, real = out.hidden_states[-1], pieces.mask.unsqueeze(-1).to(out.hidden_states[-1].dtype)
            document, out.hidden_states = (last * real).sum(1) / real.sum(1).clamp(min=1), None
        return classification_output(out.logits, batch, attentions, document)


def vocabulary(documents, config: dict, train_config) -> tuple[SubwordVocab, dict]:
    """A model built here reads the pieces of a tokenizer trained on its training split, as its
    family's is (WordPiece for BERT and DistilBERT, byte-level BPE for RoBERTa); returns it and the
    config it implies (the pad id)."""
    from hierattn.data.subwords import pad_id, train_tokenizer

    kind = "byte_bpe" if config.get("family") == "roberta" else "wordpiece"
    tokenizer = train_tokenizer(documents, kind, int(config.get("subwords", 8000)), train_config.min_freq)
    pad = pad_id(tokenizer, kind)
    return SubwordVocab(tokenizer, int(config.get("max_positions", 512)), pad), {"pad_id": pad}


def relabel(model: TransformerClassifier, labels: list[str]) -> TransformerClassifier:
    """``model`` with a classification head for ``labels``: its own where they are its labels, in
    their order; else a new head (the library's initialisation) on the same encoder, as transformers'
    ``ignore_mismatched_sizes`` gives. The encoder's weights are kept either way."""
    from transformers import AutoModelForSequenceClassification

    config = model.encoder.config
    if [config.id2label.get(i) for i in range(config.num_labels)] == list(labels):
        return model
    fresh_config = type(config).from_dict({**config.to_dict(), "num_labels": len(labels),
                                           "id2label": dict(enumerate(labels)),
                                           "label2id": {x: i for i, x in enumerate(labels)}})
    encoder = AutoModelForSequenceClassification.from_config(fresh_config, attn_implementation=IMPLEMENTATION)
    base = encoder.base_model_prefix + "."
    kept = {k: v for k, v in model.encoder.state_dict().items() if k.startswith(base)}
    missing = [k for k in encoder.load_state_dict(kept, strict=False).missing_keys if k.startswith(base)]
    if missing:
        raise ValueError(f"the encoder's weights do not fit a new head: {missing[:3]}")
    fresh = TransformerClassifier(config_from_hf(fresh_config), encoder)
    return fresh


def display_name(config: dict) -> str:
    family = FAMILIES.get(config.get("family"), str(config.get("family", "transformer")))
    return f"{family} ({config.get('layers', '?')} layers × {config.get('heads', '?')} heads)"


SPEC = ModelSpec(
    "transformer", TransformerClassifier, TransformerConfig, "Transformer encoder (Hugging Face: BERT, RoBERTa, "
    "DistilBERT)", display_name, listed=8,
    knobs=(Knob("family", "Family", "Which transformers architecture to build from scratch: BERT ([CLS], token type "
                "ids), RoBERTa (<s>, byte-level BPE) or DistilBERT (no token type ids).", "choice",
                tuple(FAMILIES)),
           Knob("layers", "Layers", "Transformer layers stacked.", "int", (), 1, 12),
           Knob("max_positions", "Window (tokens)", "The most subword tokens one document is read in, special tokens "
                "included; the rest is cut and reported.", "int", (), 16, 512),
           Knob("subwords", "Tokenizer size", "Tokens in the tokenizer trained on the training split.", "int", (), 500,
                50000)),
    maps="every layer's self-attention per head over its subword tokens, the same between words and between "
         "sentences, and the last layer's first-token ([CLS]) row over words and sentences",
    folder=HuggingFaceFolder(TransformerClassifier), vocabulary=vocabulary, relabel=relabel, reads="text")
