"""The Tour's six steps, each drawn on the shipped checkpoints and judged by ``analysis.tour``."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis import tour, tour_split
from hierattn.app import loading
from hierattn.app.downloads import chart
from hierattn.app.samples import split_part
from hierattn.data.builtin import sample_documents
from hierattn.experiments.results import RESULTS


def _verdict(shown: bool, markdown: str, what: str = "the claim") -> None:
    """A step's check on the document shown: whether the claim holds here, in a sentence of its own,
    then the figures it rests on (green where it holds beyond the baselines, else a warning)."""
    head = f"**On this document, {what} holds.** " if shown else f"**On this document, {what} does not hold.** "
    (st.success if shown else st.warning)(head + markdown,
                                          icon=":material/check_circle:" if shown else ":material/info:")


@st.cache_data(max_entries=2, show_spinner=False)
def _recorded(stamp: float):
    return tour_split.load(RESULTS / "tour.json")


def _record():
    """The recorded rates (``python -m hierattn tour``) and the checkpoint stamps they came from,
    read again only when the file changes."""
    path = RESULTS / "tour.json"
    return _recorded(path.stat().st_mtime if path.exists() else 0.0)


@st.cache_data(max_entries=32, show_spinner=False)
def _digest(folder: str, stamp: float) -> str:
    """The checkpoint's content digest, computed again only when its files change (``stamp``)."""
    return tour_split.checkpoint_digest(Path(folder))


def _rate(step: int, checkpoints: dict[str, Path]) -> tour_split.StepRate | None:
    """The step's rate over the test split, said on the page; None when not recorded."""
    rates, stamps = _record()
    rate = rates.get(step)
    if rate is None:
        st.caption("How often this holds over the test split is not recorded here (`python -m hierattn tour "
                   "--write results/tour.json` records it).")
        return None
    changed = [n for n in tour_split.CLAIMS[step][1]
               if n in checkpoints and stamps.get(n) != _digest(str(checkpoints[n]), loading.checkpoint_key(
                   checkpoints[n])[1])]
    st.info(f"**How often it holds.** {viz.md_text(tour_split.sentence(rate))}"
            + (" (recorded for an earlier version of these checkpoints)" if changed else "")
            + " The documents offered below are readable ones (no web address, no garbled characters, few words "
              "the model does not know), chosen by their measured effect: the strongest where the claim holds, a "
              "typical one (the median) and the weakest, so that one good example does not hide the rate."
            + ("" if any(k.endswith("strongest") for k in rate.picks) else
               " No readable document of the split makes the point, so none is offered as the strongest."),
            icon=":material/query_stats:")
    return rate


def _picked(rate: tour_split.StepRate | None, dataset: str, prefix: str = "") -> list[tuple[str, str]]:
    """(label, text) of the test documents the record picked for the step, strongest first."""
    if rate is None:
        return []
    texts, truth, _ = split_part(dataset, "test")
    out = []
    for pick in tour_split.PICKS:
        index = rate.picks.get(f"{prefix}{pick}")
        if index is not None and index < len(texts):
            out.append((f"{pick} effect · {truth[index]} · {' '.join(texts[index].split()[:9])}…", texts[index]))
    return out


def _explained_pick(rate: tour_split.StepRate | None, dataset: str, label: str, key: str, checkpoint: Path):
    """A picker of the step's recorded documents (else the data set's samples), and the chosen one
    explained by ``checkpoint``."""
    docs = _picked(rate, dataset) or [(f"{name} · {' '.join(text.split()[:10])}…", text)
                                      for name, text in sample_documents(dataset)]
    pick = st.selectbox(label, range(len(docs)), key=key, format_func=lambda i: docs[i][0])
    return loading.explain_cached(checkpoint, docs[pick][1])


def target_attention(checkpoints: dict[str, Path]) -> None:
    """Step 1: target attention on a bbc-news article (HCAN Figure 4)."""
    st.subheader("Target attention: the document says where it looks (HCAN Figure 4)")
    st.markdown("HCAN pools each sentence's words, then the document's sentences, with **target attention**: a learned "
                "target vector scores every position, and the softmax of those scores weighs the average. Word "
                "shade = weight within its sentence; the orange bar = the sentence's weight in the document.")
    rate = _rate(1, checkpoints)
    ex = _explained_pick(rate, "bbc-news", "An article from the test split", "tour1_doc", checkpoints["bbc-news-hcan"])
    st.markdown(f"bbc-news-hcan predicts **{viz.md_text(ex.label)}** ({max(ex.probabilities):.1%}).")
    c = tour.concentration(ex)
    shown, verdict = tour.concentration_verdict(c)
    heaviest = c.head_top_words[c.focused_heads[0]] if c.focused else c.top_words
    where = f"in head {c.focused_heads[0] + 1}" if c.focused and len(c.head_top_shares) > 1 else "here"
    _verdict(shown, f"The heaviest words {where} are " + viz.md_text(", ".join(heaviest)) + ". "
             + viz.md_text(verdict), "“a few words carry the weight”")
    if rate is not None and rate.rate < 0.5:
        st.markdown("**What this says, and what it does not.** Each head is judged on its own: averaging HCAN's "
                    "heads flattens them, so the averaged shading below can look even where one head is not. On our "
                    "HCAN most heads spread an article's weight widely; the paper draws a spread-out but not flat map "
                    "(its Figure 4). How peaked a target attention ends is set mostly by where its target vector "
                    "started, not by training (step 4 shows the sweep), and random attention of the same shape "
                    "passes this check often: concentration describes the map, it does not show that the words are "
                    "the right ones. The model classifies 97% of the test articles correctly, so accuracy does not "
                    "need peaked attention, and a heatmap's colour scale must start at zero to show that.")
    head = c.focused_heads[0] if c.focused and len(c.head_top_shares) > 1 else None
    st.caption(f"Shaded: head {head + 1}, the first where the claim holds, on its own scale." if head is not None
               else "Shaded: the heads averaged (no head holds the claim here).")
    with st.container(height=460):  # a long article scrolls inside, the step's layout stays on screen
        st.html(viz.shaded_document_html(**ex.text_view(), words=ex.target_attention("word", head),
                                         sentences=ex.target_attention("sentence", head)))


def two_self_attentions(checkpoints: dict[str, Path]) -> None:
    """Step 2: the two parallel branches on HCAN's Supplementary A reviews (Figure 5)."""
    st.subheader("Two parallel self-attentions: relations a weighted average misses (HCAN §3.4, Figure 5)")
    st.markdown("Attention only averages, so it cannot flip a meaning (negation: *was not the case*) or scale it "
                "(*to a high degree*). HCAN runs two self-attentions side by side, one with ELU values and one with "
                "tanh values (which can be negative), and multiplies their outputs element by element. The reviews "
                "below are the paper's Supplementary A: one self-attention got them wrong, two got them right.")
    rate = _rate(2, checkpoints)
    docs = _picked(rate, "tweets") + [(f"the paper's Supplementary A · {' '.join(r.split()[:9])}…", r)
                                      for r in tour.SUPPLEMENTARY_A]
    pick = st.selectbox("A tweet from the test split, or a review from HCAN's Supplementary A", range(len(docs)),
                        key="tour2_doc", format_func=lambda i: docs[i][0])
    ex = loading.explain_cached(checkpoints["tweets-hcan"], docs[pick][1])
    st.caption(f"tweets-hcan reads it as {viz.md_text(ex.label)} ({max(ex.probabilities):.0%}); our model was trained "
               "on tweets (positive / neutral / negative), not on the paper's reviews.")
    sentences = ex.document.sentences
    default = next((i for i, s in enumerate(sentences) if "doesnt" in [t.text for t in s.tokens]), 0)
    if len(sentences) == 1:
        default = 0
    s_idx = st.selectbox("Sentence", range(len(sentences)), index=default, key=f"tour2_sentence_{pick}",
                         format_func=lambda i: " ".join(t.text for t in sentences[i].tokens[:12]) + "…")
    tokens = sentences[s_idx].tokens
    words = [t.text for t in tokens]
    start = words.index("it") if "it" in words else 0
    w_idx = st.select_slider("Word", range(len(tokens)), value=start, format_func=words.__getitem__,
                             key=f"tour2_word_{pick}_{s_idx}")
    rows = tour.branch_lines(ex, sentences[s_idx].start, (tokens[w_idx].start, tokens[w_idx].end))
    st.html(viz.word_attention_html(words, rows, w_idx))
    contrast = tour.branch_contrast(ex)
    examples = "; ".join(f"'{w}' → '{a}' in branch a, '{b}' in branch b" for w, a, b in contrast.examples[:3])
    shown, verdict = tour.branch_verdict(contrast)
    st.markdown("**What to notice.** The two branches should relate a word to different words: in the paper, 'it' "
                "looks at 'doesnt' in one branch and at 'chop' in the other. The check asks whether the heads of "
                "branch a differ from those of branch b more than any other way of splitting the same heads into two "
                "groups would: a head keeps its character across the words of a review, so the whole review is "
                "judged on one split.")
    _verdict(shown, viz.md_text(verdict), "“the branches differ”")
    if examples:
        st.caption("Words whose most-attended other word differs: " + viz.md_text(examples) + ".")
    if rate is not None and rate.documents and rate.rate <= 2 / 35:
        st.markdown(f"**Over the test split, no more often than chance.** The claim holds on {rate.rate:.1%} of the "
                    "tweets; if the branch labels meant nothing, the real split would be the most different of the 35 "
                    "on 1 tweet in 35 (2.9%). On our tweets HCAN, the two branches' heads differ no more than any two "
                    "groups of its heads do: the paper's Figure 5 shows what two branches can do, not what they "
                    "must do. Where a review here holds, treat it as one of the 1 in 35.")
    st.caption("The paper also compares with a single self-attention on the same reviews. We ship no "
               "single-self-attention HCAN for tweets; on bbc-news, docs/RESULTS.md has both rows.")


def diagonal_or_columnar(checkpoints: dict[str, Path]) -> None:
    """Step 3: SANet's band-diagonal sentiment against columnar topic attention."""
    st.subheader("Sentiment looks near, topic looks at a few columns (SANet Figures 3-5, Table 2)")
    st.markdown("In SANet's self-attention maps, sentiment tasks give a **band around the diagonal**: each word "
                "attends to its neighbours, the local phrase carrying the polarity. Topic tasks give **columns**: "
                "every word attends to the same few topical words. SANet measures the first with diagonality "
                "(share of attention within b positions of the diagonal).")
    rate = _rate(3, checkpoints)
    tweets = _picked(rate, "tweets", "tweet ") or [(" ".join(t.split()[:10]), t) for _, t in sample_documents("tweets")]
    articles = _picked(rate, "bbc-news", "article ") or [(" ".join(t.split()[:10]), t)
                                                         for _, t in sample_documents("bbc-news")]
    left, right = st.columns(2)
    t_pick = left.selectbox("A tweet (tweets-sanet)", range(len(tweets)), key="tour3_tweet",
                            format_func=lambda i: tweets[i][0])
    a_pick = right.selectbox("An article (bbc-news-sanet)", range(len(articles)), key="tour3_article",
                             format_func=lambda i: articles[i][0])
    shapes = {}
    for name, text in (("tweets-sanet", tweets[t_pick][1]), ("bbc-news-sanet", articles[a_pick][1])):
        ex = loading.explain_cached(checkpoints[name], text)
        map_name = ex.self_attention_names[0]
        matrix = ex.self_attention(map_name, None, None)
        words = [t.text for s in ex.document.sentences for t in s.tokens]
        n = min(len(words), 40)
        chart(viz.attention_heatmap(matrix[:n, :n], words[:n], f"{name} · first {n} words"),
              f"{name} · self-attention, first {n} words", key=f"tour3_{name}")
        shapes[name] = tour.matrix_shape(ex, map_name)
    verdicts = tour.sanet_verdict(shapes["tweets-sanet"], shapes["bbc-news-sanet"])
    for (shown, verdict), what in zip(verdicts, ("“sentiment looks near”", "“topic looks at a few columns”")):
        _verdict(shown, viz.md_text(verdict), what)
    if rate is not None and rate.parts:
        tweets, articles = rate.parts["tweets diagonal"], rate.parts["articles columnar"]
        diagonal, columnar = tweets[1] / max(tweets[0], 1), articles[1] / max(articles[0], 1)
        st.markdown(
            "**Over the test splits.** "
            + (f"Only {diagonal:.0%} of tweets are more diagonal than their own rows shuffled, no more than the 5% "
               "chance gives: our tweets SANet shows no band. " if diagonal <= 0.06 else
               f"{diagonal:.0%} of tweets are more diagonal than their own rows shuffled (5% by chance). ")
            + (f"{columnar:.0%} of articles are more columnar than theirs: the columns survive the null that keeps "
               "each row's sharpness, so topic attention here does look at a few words throughout."
               if columnar >= 0.5 else
               f"{columnar:.0%} of articles are more columnar than theirs (5% by chance)."))
    st.caption("Why these baselines: attention spread evenly over a 15-word tweet already has 41% of its weight "
               "within 3 positions of the diagonal, over a 1,000-word article under 1%, so raw shares mostly measure "
               "length. And a sharp row puts much of its weight near the diagonal or on a few keys by chance: the "
               "check shuffles each row's own weights among its keys, which keeps how sharp the row is and destroys "
               "only where its weight sits. Over whole test splits (Dataset statistics page, topic versus "
               "sentiment) our tweets SANet's attention is no more diagonal than an even spread.")


def han_and_hcan(checkpoints: dict[str, Path]) -> None:
    """Step 4: HAN against HCAN on one review (HCAN Figures 6-8)."""
    st.subheader("HAN against HCAN: focused or spread out (HCAN Figures 6-8)")
    st.markdown("HAN feeds recurrent states straight into target attention, so its weights sit on keywords "
                "(Figure 6). HCAN's self-attention first redistributes the content of keywords over other words, "
                "so its target attention looks more spread out (Figure 7), and a plain word like *the* can carry a "
                "keyword's meaning (Figure 8).")
    rate = _rate(4, checkpoints)
    docs = _picked(rate, "tweets") + [(f"the paper's Supplementary A · {' '.join(r.split()[:9])}…", r)
                                      for r in tour.SUPPLEMENTARY_A]
    pick = st.selectbox("A tweet both models classify correctly (test split), or a review from the paper",
                        range(len(docs)), key="tour4_doc", format_func=lambda i: docs[i][0])
    han = loading.explain_cached(checkpoints["tweets-han"], docs[pick][1])
    hcan = loading.explain_cached(checkpoints["tweets-hcan"], docs[pick][1])
    left, right = st.columns(2)
    left.markdown(f"**HAN** ({viz.md_text(han.label)})")
    left.html(viz.shaded_document_html(**han.text_view(), words=han.target_attention("word"),
                                       sentences=han.target_attention("sentence")))
    right.markdown(f"**HCAN** ({viz.md_text(hcan.label)})")
    st.caption("**What to notice.** Is HAN's shading darker on fewer words than HCAN's?")
    right.html(viz.shaded_document_html(**hcan.text_view(), words=hcan.target_attention("word"),
                                        sentences=hcan.target_attention("sentence")))
    c_han, c_hcan = tour.concentration(han), tour.concentration(hcan)
    shown, verdict = tour.han_hcan_verdict(c_han, c_hcan)
    _verdict(shown, viz.md_text(verdict), "“HAN is more focused”")
    start_sweep_lesson()
    sentence, chosen = tour.heaviest_word(hcan)
    tokens = [t.text for t in sentence.tokens]
    st.markdown(f"**Figure 8 on our HCAN.** Its heaviest word is {viz.md_code(tokens[chosen])}; before the target "
                "attention weighed it, each self-attention branch filled it with content from these words:")
    span = (sentence.tokens[chosen].start, sentence.tokens[chosen].end)
    st.html(viz.word_attention_html(tokens, tour.branch_lines(hcan, sentence.start, span), chosen))


def start_sweep_lesson(dataset: str = "tweets") -> None:
    """What the sweep of the query's start shows (``experiments.start_sweep``): the same models trained
    from starts of every scale, their accuracy, their sharpness and their rank agreement."""
    from hierattn.experiments import start_sweep

    rows = start_sweep.rows(dataset)
    if not rows:
        st.caption("The sweep of where the query vectors start is not recorded here (`python -m hierattn reproduce "
                   f"{dataset}/` runs it).")
        return
    st.markdown("**Is it the architecture, or where training started?** HCAN scores each position against a "
                "learned target vector T, HAN against a learned context vector u_w; the softmax of those scores is "
                "sharper the longer the vector. The registry trained both from starts of every scale, N(0, v) for v "
                "from 1/d to 10, three seeds each, and measured each trained model on the test split:")
    def points(figure):
        out = {}
        for r in rows:
            values = figure(r)
            out.setdefault(r.label, ([], []))
            out[r.label][0].extend([r.variance] * len(values))
            out[r.label][1].extend(values)
        return out

    left, middle, right = st.columns(3)
    for column, (title, figure, percent) in zip((left, middle, right), (
            ("test accuracy", lambda r: r.accuracy, True),
            ("word attention's JSD from even", lambda r: r.word_jsd, False),
            ("Kendall tau with leave-one-out", lambda r: r.taus.get(start_sweep.TAUS[0], []), False))):
        chart(viz.start_sweep_chart(points(figure), title, percent), f"where the attention starts · {title}",
              column, key=f"tour4_sweep_{title}")
    seeds = sum(r.seeds for r in rows)
    st.markdown(f"**What the {seeds} recorded runs show.**\n" + "\n".join(
        f"- {viz.md_text(line)}" for line in start_sweep.lesson(rows)))
    st.caption("A rank correlation such as Kendall tau does not change when the scores are multiplied by a constant; "
               "a sharpness such as the JSD from even does. Where the sharpness follows the start, compare the two "
               "architectures on what training decides: which words rank high (right), not how peaked the map is.")


def transformer_heads(checkpoints: dict[str, Path]) -> None:
    """Step 5: every head of the shipped transformer beside an even spread (Clark et al. 2019)."""
    from hierattn.analysis import heads

    st.subheader("Inside a transformer: what its heads do (Clark et al. 2019)")
    st.markdown("A transformer has no target attention: every layer lets every token attend to every other, in "
                "several heads. In a pre-trained BERT, Clark et al. found heads with one job: attend to the previous "
                "token, to the next, to the separator token. The grid measures each head of our small BERT, trained "
                "from scratch on tweets, against an even spread over the same tokens: a head is labelled when its "
                f"share is {heads.MARGIN:.0%} above.")
    ex = _explained_pick(_rate(5, checkpoints), "tweets", "A tweet from the test split", "tour5_doc",
                         checkpoints["tweets-transformer"])
    rows = heads.overview(ex)
    found = [r for r in rows if r["finding"]]
    _verdict(bool(found), (f"{len(found)} of {len(rows)} heads have a pattern {heads.MARGIN:.0%} above an even "
                           "spread: " + ", ".join(
        f"layer {r['layer'] + 1} head {r['head'] + 1} ({r['finding']})" for r in found[:6]) + ".") if found else
        f"None of its {len(rows)} heads is {heads.MARGIN:.0%} above an even spread in any pattern.",
        "“heads have positional jobs”")
    values, labels = heads.grid(rows)
    chart(viz.head_grid(values, labels, [f"layer {i + 1}" for i in range(values.shape[0])],
                        [f"head {h + 1}" for h in range(values.shape[1])]), "every head at a glance", key="tour_heads")
    if not found:
        st.markdown("**Why not, on our model.** Clark et al. looked at BERT after pre-training on billions of words; "
                    "ours learnt from 30,000 tweets for a few epochs, to classify them. Its heads' shares of the "
                    "previous token, the next token and the special tokens stay within a few points of an even "
                    "spread on most tweets: positional heads come with pre-training, not with attention itself.")


def pretrained_heads(checkpoints: dict[str, Path]) -> None:
    """Step 6: the heads Clark et al. (2019) found in BERT, on the shipped pre-trained encoder."""
    from hierattn.analysis import clark, heads

    st.subheader("A pre-trained transformer: the heads Clark et al. found")
    st.markdown("all-MiniLM-L6-v2 learnt English from over a billion sentence pairs before it saw a tweet; "
                "tweets-minilm is that model fine-tuned here on 4,000 tweets. Clark et al. (2019) found in pre-trained "
                "BERT heads that put over half of their attention on the **previous** or the **next** token, and "
                "middle layers that sink over half of theirs on one special token, [SEP] in BERT. Each share below "
                "stands beside an even spread over the same tokens: 1/T for a position, s/T for s special tokens.")
    ex = _explained_pick(_rate(6, checkpoints), "tweets", "A tweet from the test split", "tour6_doc",
                         checkpoints["tweets-minilm"])
    rows = clark.profile(ex)
    layers = clark.by_layer(rows)
    best = max(rows, key=lambda r: max(r["previous"] - r["previous_even"], r["next"] - r["next_even"]))
    side = "previous" if best["previous"] - best["previous_even"] >= best["next"] - best["next_even"] else "next"
    sink = max(layers, key=lambda r: r["first special"] - r["first special_even"])
    first = rows[0]["first_special"] or "the first token"
    excess = min(best[side] - best[f"{side}_even"], sink["first special"] - sink["first special_even"])
    _verdict(excess >= heads.MARGIN, f"Layer {best['layer'] + 1}, head {best['head'] + 1} gives "
             f"{best[side]:.0%} of its attention to the {side} token (even: {best[f'{side}_even']:.0%}); layer "
             f"{sink['layer'] + 1}'s heads give {viz.md_text(first)} {sink['first special']:.0%} on average (even: "
             f"{sink['first special_even']:.0%}).", "“pre-training leaves positional heads and a sink”")
    chart(viz.clark_layers(layers, first), "what the heads look at, layer by layer", key="tour_pretrained_layers")
    st.markdown(f"**Beside the paper.** In BERT-base, Clark et al. report heads with over 50% on the previous or "
                f"next token, and over half of layers 6-10's attention on [SEP]. This encoder sinks on "
                f"{viz.md_text(first)} instead: the same habit, another token (a sink is where a head puts attention "
                "it has no use for). Step 5 asks the same of a BERT trained from scratch on these tweets alone.")


# The steps in order: (title, the shipped checkpoints each needs, the function that draws it)
STEPS = {1: ("1 · Target attention", ["bbc-news-hcan"], target_attention),
         2: ("2 · Two self-attentions", ["tweets-hcan"], two_self_attentions),
         3: ("3 · Diagonal or columnar", ["tweets-sanet", "bbc-news-sanet"], diagonal_or_columnar),
         4: ("4 · HAN and HCAN", ["tweets-han", "tweets-hcan"], han_and_hcan),
         5: ("5 · Inside a transformer", ["tweets-transformer"], transformer_heads),
         6: ("6 · A pre-trained transformer", ["tweets-minilm"], pretrained_heads)}
