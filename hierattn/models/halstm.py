"""HA-LSTM (2020) and its LSTM / BiLSTM / ON-LSTM baselines, with the classifier of the paper's section 3.2.

Embedding (100) -> recurrent layer (128 units; BiLSTM: 64 per direction) -> dense 32 (ReLU) ->
dropout 0.1 -> output layer. The models differ only in the recurrent layer (``cell``):
``"ha"`` (the sliding-attention LSTM of section 2, window ``window`` = N = 4, 8 or 12), ``"lstm"``,
``"bilstm"``, ``"onlstm"`` (Shen et al. 2019, chunk size 1). The document is read flat, word by word;
the state after the last real word (BiLSTM: both directions' final states) feeds the dense layer.

Attention (``cell="ha"``): ``word.window``, weights (batch, time, query, key): at step t, how each
slot of the window [h_{t-1}, ..., h_{t-N}] (slot w = h_{t-1-w}) attends to the others. Steps
before the N-th look at zero slots, as the paper's window starts as zeros; those slots are real
inputs of the attention, so the mask is True for every slot of a real step.

Gate (``cell="onlstm"``): ``word.depth``, kind ``gate``, weights (batch, time, key) with keys the
H ordered hidden units: at each word, the distribution of the master forget gate's split point.
It is not attention: nothing is weighed by it; it says how much of the memory each word closes.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from hierattn.contract import GATE, HIDDEN, WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, flatten_words, last_real, run_rnn
from hierattn.models.recurrent import OrderedNeuronsLSTMCell, SlidingAttentionLSTMCell, scan
from hierattn.models.spec import Knob, ModelSpec

CELLS = ("ha", "lstm", "bilstm", "onlstm")


@dataclass
class HALSTMConfig:
    vocab_size: int
    num_classes: int
    cell: str = "ha"
    window: int = 4  # N
    embed_dim: int = 100
    hidden: int = 128
    dense: int = 32
    dropout: float = 0.1


class HALSTM(nn.Module):
    def __init__(self, config: HALSTMConfig):
        super().__init__()
        self.config = c = config
        if c.cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, got {c.cell!r}")
        if c.cell == "bilstm" and c.hidden % 2:
            raise ValueError(f"a BiLSTM splits hidden={c.hidden} over two directions; use an even size")
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        if c.cell == "ha":
            self.rnn = SlidingAttentionLSTMCell(c.embed_dim, c.hidden, c.window)
        elif c.cell == "onlstm":
            self.rnn = OrderedNeuronsLSTMCell(c.embed_dim, c.hidden)
        else:
            bi = c.cell == "bilstm"
            self.rnn = nn.LSTM(c.embed_dim, c.hidden // 2 if bi else c.hidden, batch_first=True, bidirectional=bi)
        self.head = nn.Sequential(nn.Linear(c.hidden, c.dense), nn.ReLU(), nn.Dropout(c.dropout),
                                  nn.Linear(c.dense, c.num_classes))

    @property
    def attention_free(self) -> bool:
        return self.config.cell in ("lstm", "bilstm")

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        ids, mask = flatten_words(batch)  # (B, T)
        x = self.embedding(ids)  # (B, T, E)
        attentions = {}
        if self.config.cell == "ha":
            h, weights = scan(self.rnn, x, mask)  # (B, T, H), (B, T, N, N)
            final = last_real(h, mask)
            if return_attentions:
                attentions["word.window"] = AttentionMap(
                    weights, ("batch", "time", "query", "key"), WORD, mask[:, :, None, None].expand_as(weights))
        elif self.config.cell == "onlstm":
            h, split = scan(self.rnn, x, mask)  # (B, T, H), (B, T, H)
            final = last_real(h, mask)
            if return_attentions:
                attentions["word.depth"] = AttentionMap(split, ("batch", "time", "key"), HIDDEN,
                                                        mask[:, :, None].expand_as(split), kind=GATE)
        else:
            h = run_rnn(self.rnn, x, mask)  # (B, T, H)
            if self.config.cell == "lstm":
                final = last_real(h, mask)
            else:  # forward state at the last word, backward state at the first
                half = self.config.hidden // 2
                final = last_real(h, mask).clone()
                final[:, half:] = h[:, 0, half:]
        return classification_output(self.head(final), batch, attentions, final)


def display_name(config: dict) -> str:
    cell = config.get("cell", "ha")
    return f"HA-LSTM-{config.get('window', 4)}" if cell == "ha" else {"lstm": "LSTM", "bilstm": "BiLSTM",
                                                                      "onlstm": "ON-LSTM"}[cell]


SPEC = ModelSpec(
    "halstm", HALSTM, HALSTMConfig, "HA-LSTM (LSTM with sliding attention)", display_name, listed=4,
    knobs=(
        Knob("cell", "Recurrent layer",
             "HA-LSTM (sliding attention over the last N states), or the paper's baselines: LSTM, BiLSTM "
             "and ON-LSTM (ordered neurons, Shen et al. 2019).", "choice", CELLS),
        Knob("window", "Window N", "How many past hidden states the HA-LSTM cell attends over.", "choice",
             (4, 8, 12)),
    ),
    maps="at each time step, the cell's attention among its window of the last N hidden states (ON-LSTM: its "
         "master forget gate over the ordered hidden units, a gate rather than attention)",
    tested_words=(120, "HA-LSTM's paper read at most 120 words of a text (q in its Tables 2-5)"))
