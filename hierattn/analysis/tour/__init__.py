"""The teaching tour: each step's claim from the papers, and the check of that claim on one
explained document, computed (the Tour page shows the numbers and says plainly where our models
do not show what the paper's did). Works on ``Explanation`` objects only.

One module per step, each holding the step's claim, its check of one document against its null,
and how often the check holds over a test split (its ``Step``, listed in order in ``steps``):
1. ``target_attention`` (HCAN Figure 4): a few words and sentences carry most of the weight.
2. ``two_self_attentions`` (HCAN section 3.4, Figure 5, Supplementary A): the two parallel
   self-attentions relate a word to different words, which is how negation and scaling can be captured.
3. ``diagonal_or_columnar`` (SANet Figures 3-5, Table 2): sentiment attention is band-diagonal,
   topic attention columnar.
4. ``han_and_hcan`` (HCAN Figures 6-8): HAN's target attention is more focused on keywords;
   HCAN's self-attention first spreads keyword content over other words.
5. ``transformer_heads`` (Clark et al. 2019): a transformer's heads attend by position or to special tokens.
6. ``pretrained_heads`` (Clark et al. 2019): a pre-trained encoder's positional heads and its sink.

Every claim is judged against a baseline that keeps what the claim is not about (each step's
module says which and why), so uniform and random attention never hold (tests/analysis/test_tour.py
feeds both through every check). Each verdict is (holds, the figures in a sentence); the page says
which, in a sentence of its own. What the steps share: ``rates`` (a step's rate over a split and the
documents it offers), ``record`` (the rates kept in results/tour.json), ``draws`` (the nulls' seeds).
"""
