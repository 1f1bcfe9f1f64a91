"""What the model could not read is marked where it stands (unknown words, what the caps cut), and the
shading's colour starts at zero with the even spread marked."""
import re

import plotly.colors

from hierattn import viz
from hierattn.analysis.explain import explain
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.text import TextConfig, tokenize
from hierattn.viz.html import even_word_weight
from tests.conftest import REPO

GERMAN = ("Der Bundestag hat am Donnerstag ein neues Gesetz beschlossen. Die Opposition kritisierte die "
          "Entscheidung scharf und kündigte Widerstand an.")


def _colour_share(fig, value: float) -> float:
    """Where ``value`` falls on the bar chart's colour scale, 0 (first colour) .. 1 (last)."""
    marker = fig.data[0].marker
    return (value - marker.cmin) / (marker.cmax - marker.cmin)


def test_nearly_even_weights_get_nearly_the_same_colour():
    """HCAN's nearly even weights (0.105 .. 0.117) were drawn white to navy: the colour ramp ran
    from the smallest weight to the largest."""
    weights = [0.105, 0.108, 0.111, 0.112, 0.117, 0.110, 0.113, 0.112, 0.112]
    fig = viz.distribution_chart(weights, [f"w{i}" for i in range(9)])
    assert fig.data[0].marker.cmin == 0
    assert _colour_share(fig, 0.105) > 0.85  # about as dark as the darkest bar
    assert fig.data[0].marker.cmax == 0.117 and fig.layout.yaxis.rangemode == "tozero"  # as the bars' height
    even = [shape for shape in fig.layout.shapes if shape.y0 == shape.y1]
    assert len(even) == 1 and abs(even[0].y0 - 1 / 9) < 1e-12  # the even spread, drawn
    assert any("even spread" in a.text for a in fig.layout.annotations)
    assert plotly.colors.get_colorscale("Blues")  # the scale the shading uses too


def test_the_shading_legend_starts_at_zero_and_marks_the_even_spread():
    legend = viz.shading_legend_html(0.2, (0.1, 0.1))
    assert "word weight: 0" in legend and "0.2" in legend and "an even spread (0.1)" in legend
    at = float(re.search(r'class="even" style="position:absolute;left:([0-9.]+)%', legend).group(1))
    assert at == 50.0  # even spread 0.1 on a 0 .. 0.2 ramp
    # HAN's word weights are a distribution per sentence: the even spread depends on its length
    assert even_word_weight([[0.5, 0.5], [0.2, 0.3, 0.5, 0.0]]) == (0.25, 0.5)
    assert even_word_weight([[0.1, 0.2], [0.3, 0.4]]) == (0.25, 0.25)  # one distribution over the document
    assert even_word_weight([[3.0, 1.0]]) is None  # not a distribution (an attribution, a coverage)
    assert "0.25 to 0.5 by sentence length" in viz.shading_legend_html(1.0, (0.25, 0.5))


def test_unknown_words_are_marked_counted_and_warned_about():
    classifier = load_classifier(REPO / "checkpoints" / "bbc-news-han", device="cpu")
    ex = explain(classifier, GERMAN)
    assert ex.unknown_count > ex.word_count() / 2 and ex.mostly_unknown()
    english = explain(classifier, "The government announced a new tax on Monday. Shares fell sharply.")
    assert english.unknown_count == 0 and not english.mostly_unknown()
    view = viz.shaded_document_html(**ex.text_view(), words=ex.target_attention("word"),
                                    sentences=ex.target_attention("sentence"))
    assert len(re.findall(r'class="ha-w[^"]* ha-unk"', view)) == ex.unknown_count + 1  # and the legend
    assert f"not in the model's vocabulary ({ex.unknown_count})" in view
    assert ex.to_dict()["unknown_words"] == ex.unknown_count


def test_what_the_caps_cut_is_greyed_where_it_stands():
    text = ("First sentence is fine. Second one is also fine. " + "This third sentence has far too many words "
            "for the cap. Fourth sentence never read. Fifth sentence never read either.")
    doc = tokenize(text, TextConfig(max_sentences=3, max_words=5))
    unread = doc.unread()
    assert unread[1] == "."  # the sixth word of "Second one is also fine."
    assert unread[2].startswith(" too many words for the cap.")  # cut inside sentence 3
    assert "Fourth sentence never read. Fifth" in unread[2]  # then the sentences beyond the caps
    assert tokenize("Short. Text.", TextConfig()).unread() == {}
    out = viz.document_html(text, doc.spans(), [[0.2] * len(s.tokens) for s in doc.sentences], [0.3, 0.3, 0.4],
                            unread=unread)
    assert out.count('class="unread"') == 2 and "not read" in out
    assert 'fine</span><span class="unread"' in out  # where it stands: "fine." as typed
    assert "Fourth sentence never read" in out  # shown, greyed, not dropped


def test_unread_text_in_the_middle_stays_in_its_sentence():
    text = "One two three four five six. Seven eight."
    doc = tokenize(text, TextConfig(max_sentences=5, max_words=3))
    assert doc.unread() == {0: " four five six."}
    out = viz.document_html(text, doc.spans(), None, None, unread=doc.unread())
    first, second = out.split("Seven")
    assert "four five six." in first


def test_unknown_words_read_on_any_shade_and_the_heaviest_unknown_word_is_named(checkpoint_dir):
    """A red underline vanished on a dark cell: unknown words carry red hatching and a dashed outline
    at every shade; when the heaviest word is one the model read as <unk>, Explore says so."""
    from hierattn.analysis.explain import explain
    from hierattn.app.panels.shading import Shading, _heaviest_unknown
    from hierattn.checkpoint.reading import load_classifier

    ex = explain(load_classifier(checkpoint_dir / "tiny-han", device="cpu"), "The zzqx team won. Fans cheered!")
    flags = [f for fs in ex.unknown for f in fs]
    assert flags[1] and not flags[0]  # "zzqx" is unknown to the tiny vocabulary
    dark = viz.shaded_document_html(**ex.text_view(), words=[[0.1, 0.9, 0.0], [0.5, 0.5]], sentences=[0.5, 0.5])
    cell = dark[dark.index('class="ha-w ha-dk ha-unk"'):]  # the darkest word, unknown
    assert "zzqx" in cell[: cell.index("</span>")]
    rules = dict(r.rstrip("}").split("{") for r in dark[dark.index("<style>") + 7: dark.index("</style>")].split("}")
                 if "{" in r)  # the style block the shading carries: selector -> declarations
    assert "repeating-linear-gradient" in rules[".ha-w.ha-unk"] and "outline:1.5px dashed" in rules[".ha-w.ha-unk"]
    assert "color:#fff" in rules[".ha-w.ha-dk"]
    shading = Shading(True, False)
    shading.words, shading.sentences = [[0.1, 0.8, 0.1], [0.5, 0.5]], [0.9, 0.1]
    assert _heaviest_unknown(ex, shading) == "zzqx"
    shading.words = [[0.8, 0.1, 0.1], [0.5, 0.5]]
    assert _heaviest_unknown(ex, shading) is None
