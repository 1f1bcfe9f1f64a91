"""The spaCy pipeline every text is read with (``hierattn.data.spacy_pipeline``): linear in every
input, spaCy's own tokens for ordinary text, and a vocabulary that stays bounded over a server's
life without changing how any text is read."""
import json
import secrets

from hierattn.data import spacy_pipeline
from hierattn.data.spacy_pipeline import MAX_RUN, pipeline, run_pieces
from hierattn.data.text import tokenize, tokenize_many

# One run of each kind of character, with no space: punctuation, quotes, brackets, ellipses and
# emoji were quadratic in spaCy's tokenizer (20,000 "!" took 25 s, 20,000 emoji 33 s).
CHARACTER_RUNS = {
    "exclamation": "!", "question and exclamation": "!?", "quote": "'", "bracket": "(", "ellipsis": "…",
    "emoji": "😀", "letters": "a", "digits": "1", "chinese": "中", "hebrew": "ש", "combining mark": "\u0301",
    "zero-width joiner": "\u200d", "no-break space": "\u00a0", "line breaks": "\n", "spaces": " ", "tabs": "\t",
    "control": "\x01", "url": "http://x.y/a?b=c&", "mixed": "a!😀,\"",
}


def test_runs_of_every_character_class_are_read_in_linear_time():
    """Each run at 10,000 and 100,000 characters after "Breaking news ", by tokenize and by
    tokenize_many, in a process with a time bound (a runaway, not a speed goal). Linear growth: the
    100k run costs at most 25 times the 10k one plus 3 s of the process's own CPU time, which a busy
    machine does not inflate as it does the wall clock (quadratic was 100 times: 20,000 "!" took
    25 s, so 100,000 would take over ten minutes). spaCy never sees a space-free run longer than
    MAX_RUN."""
    import subprocess
    import sys

    code = f"""
import json, time
from hierattn.data.spacy_pipeline import MAX_RUN, pipeline
from hierattn.data.text import tokenize, tokenize_many
runs = {CHARACTER_RUNS!r}
out = {{}}
for name, ch in runs.items():
    times = []
    for n in (10_000, 100_000):
        text = "Breaking news " + (ch * (n // len(ch) + 1))[:n]
        start = time.process_time()
        doc = tokenize(text)
        tokenize_many([text, "a second one"])
        times.append(time.process_time() - start)
        assert all(text[t.start:t.end] == t.text for s in doc.sentences for t in s.tokens)
    out[name] = times
print(json.dumps({{"times": out, "longest": pipeline().tokenizer.longest_piece, "limit": MAX_RUN}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                          env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    for name, (short, long) in record["times"].items():
        assert long <= 25 * short + 3.0, f"{name}: 10k took {short:.3f} s, 100k {long:.3f} s"
    assert 0 < record["longest"] <= record["limit"]


def test_text_without_long_runs_is_tokenised_as_by_spacy_alone():
    """The bound changes nothing for ordinary text: the same tokens and spaces as spaCy's own
    tokenizer; a long run is cut into pieces that rejoin to the text."""
    import spacy

    plain = spacy.blank("en").tokenizer
    text = 'He said: "state-of-the-art!!!" (really?) — café, 中文。 http://example.com/a?b=1 :-) ok...\n\nNext.'
    ours = pipeline().tokenizer(text)
    assert [(t.text, t.whitespace_) for t in ours] == [(t.text, t.whitespace_) for t in plain(text)]
    long = "x " + "!?" * 500 + " y"
    assert "".join(run_pieces(long)) == long
    assert max(len(w) for p in run_pieces(long) for w in p.split()) == MAX_RUN
    assert pipeline().tokenizer(long).text == long


def test_the_vocabulary_stays_bounded_and_a_new_pipeline_reads_texts_as_the_old_one(monkeypatch):
    """spaCy keeps every string it reads for the pipeline's life: 3,000 pastes of random tokens grew a
    process by 261 MB. Past the bound the pipeline is replaced, and reads every text as before."""
    monkeypatch.setattr(spacy_pipeline, "VOCABULARY_BOUND", 5_000)
    monkeypatch.setattr(spacy_pipeline, "_current", None)
    texts = ["The market rallied on Monday.\nShares rose 3% after the report.",
             'He said: "state-of-the-art!!!" (really?) café, 中文。 http://example.com/a?b=1 ok...',
             "x " + "!?" * 500 + " y"]
    before = [tokenize(t) for t in texts]
    first, sizes = pipeline(), []
    for _ in range(40):  # 400 new strings a paste
        tokenize(" ".join(secrets.token_hex(5) for _ in range(400)) + ".")
        sizes.append(len(pipeline().vocab.strings))
    assert pipeline() is not first and max(sizes) <= 2 * 5_000  # one paste beyond the bound at most
    assert [tokenize(t) for t in texts] == before
    assert tokenize_many(texts) == before
