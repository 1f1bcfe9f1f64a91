"""Attention forming as a model trains, played back: a run's recorded explanation of a few
validation documents (``training.playback``), one epoch at a time with a slider, beside the run's
validation accuracy and the document's sharpness; or two runs side by side on the same document
(the Tour's runs from two starts). The record is read, never computed here."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart, slide_of


def _opening(text: str, words: int = 9) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _importance(shot: dict) -> list[list[float]] | None:
    """Each word's weight in the document: its weight in its sentence times the sentence's."""
    words, sentences = shot.get("words"), shot.get("sentences")
    if words is None:
        return None
    if sentences is None:
        return words
    return [[w * sentences[s] for w in ws] for s, ws in enumerate(words)]


def _epoch_label(epoch: dict) -> str:
    accuracy = epoch.get("val_accuracy")
    return (f"epoch {epoch['epoch']}" + (" (the start)" if epoch["epoch"] == 0 else "")
            + (f" · validation accuracy {accuracy:.1%}" if accuracy is not None else ""))


def show(runs: dict[str, dict], key: str, about: str) -> None:
    """Play back ``runs`` (name -> a playback record) on the same document: a picker of the
    recorded documents (the first run's; every run must have recorded the same ones), a slider over
    the epochs, each run's shading at that epoch side by side, the accuracy and sharpness per epoch,
    and a slide of the shading at the start and at the chosen epoch."""
    names = list(runs)
    first = runs[names[0]]
    if len(names) > 1:
        st.caption("Both runs are shaded on one scale (the darker of the two at this epoch): a flat map looks flat "
                   "beside a peaked one.")
    documents = first["documents"]
    same = [n for n in names if [d["text"] for d in runs[n]["documents"]] == [d["text"] for d in documents]]
    if len(same) < len(names):
        st.warning("These runs recorded different documents; only " + ", ".join(same) + " can be shown together.")
        names = same
    from hierattn.analysis.tour.rates import readable

    order = sorted(range(len(documents)), key=lambda i: not readable(documents[i]["text"]))  # a class's screen first
    pick = st.selectbox("A validation document the run watched", order, key=f"{key}_doc",
                        format_func=lambda i: f"{documents[i]['truth']} · {_opening(documents[i]['text'])}")
    document = documents[pick]
    last = min(len(runs[n]["epochs"]) for n in names) - 1
    epoch = st.slider("Epoch (0: before training)", 0, last, last, key=f"{key}_epoch") if last > 0 else 0
    shots = {n: runs[n]["epochs"][epoch]["documents"][pick] for n in names}
    if any(s is None or "words" not in s for s in shots.values()):
        st.info("This model has no target attention over words to play back.")
        return
    peak = max(max((v for row in _importance(s) for v in row), default=0.0) for s in shots.values())
    # runs side by side share one scale: each on its own, a flat map's darkest word looks as dark as a peaked one's
    word_peak = max(max((w for row in s["words"] for w in row), default=0.0) for s in shots.values()) or None
    sentence_peak = max((max(s["sentences"], default=0.0) for s in shots.values() if s.get("sentences")),
                        default=0.0) or None
    columns = st.columns(len(names))
    for column, name in zip(columns, names):
        shot, record = shots[name], runs[name]
        best = record.get("best_epoch")
        column.markdown(f"**{viz.md_text(name)}** · {viz.md_text(_epoch_label(record['epochs'][epoch]))}"
                        + (" · the epoch the checkpoint kept" if best == epoch else ""))
        column.markdown(f"Predicts **{viz.md_text(shot['label'])}** ({max(shot['probabilities']):.0%}); the document "
                        f"is {viz.md_text(document['truth'])}. Its word attention's JSD from even: "
                        f"{shot.get('word_jsd', float('nan')):.3f}.")
        column.html(viz.shaded_document_html(text=document["text"], spans=document["spans"],
                                             words=shot["words"], sentences=shot.get("sentences"),
                                             unknown=document.get("unknown"),
                                             unread={int(k): v for k, v in (document.get("unread") or {}).items()},
                                             peak=word_peak, sentence_peak=sentence_peak))
    figures = Figures(about)
    series = {n: ([e["epoch"] for e in runs[n]["epochs"]], [e.get("val_accuracy") for e in runs[n]["epochs"]],
                  [(e["documents"][pick] or {}).get("word_jsd", 0.0) for e in runs[n]["epochs"]]) for n in names}
    chart(viz.forming_chart(series, epoch), "Accuracy and this document's sharpness, epoch by epoch",
          key=f"{key}_chart", figures=figures)

    def slide():
        panels = []
        for name in names:
            for at in dict.fromkeys((0, epoch)):
                shot = runs[name]["epochs"][at]["documents"][pick]
                panels.append((f"{name} · epoch {at}" + (" (start)" if at == 0 else ""), document["sentence_words"],
                               _importance(shot), document.get("unknown") or [[False] * len(w) for w in
                                                                              document["sentence_words"]]))
        top = max(max((v for row in p[2] for v in row), default=0.0) for p in panels)
        return viz.shaded_text(panels, top or peak or 1.0)

    slide_of(slide, "Attention at the start and at this epoch", key=f"{key}_slide", figures=figures)
