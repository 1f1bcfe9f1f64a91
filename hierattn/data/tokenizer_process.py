"""A foreign tokenizer reads text in a child process of bounded memory and time.

The rules of ``tokenizer_rules`` were beaten twice (a backtracking regex, then a chain of Replaces
each within the rule), and the next unknown component could beat them again. The tokenizers library
runs in Rust under the interpreter lock: a component that allocates without bound aborts the whole
server process (``memory allocation of 4294969984 bytes failed``: every session gone), and one that
works without bound holds every visitor's page. So the text a visitor pastes is tokenised in a small
child process that caps its own address space (``limits.TOKENIZER_MB``) and is given
``limits.TOKENIZER_SECONDS`` per text: past either, the child is ended, the paste gets a message,
and the next paste starts a fresh child. The child is kept across pastes and shared by every model
of one tokenizer in the process (:func:`shared`: its start, about 0.1 s, is paid once), and what
crosses the pipe is JSON, never a pickle.
"""
from __future__ import annotations

import hashlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from hierattn.limits import TOKENIZER_MB, TOKENIZER_SECONDS, LimitExceeded


@dataclass(frozen=True)
class Encoding:
    """What ``tokenizers.Encoding`` gives for a text, as the child sent it."""
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]


class TokenizerProcess:
    """``encode(text)`` of a tokenizer.json in a child process (see the module). Shared by every
    session that uses the model: one text at a time."""

    def __init__(self, spec: str):
        self.spec = spec  # tokenizer.json's text, already checked by tokenizer_rules
        self._child: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        command = [sys.executable, "-m", "hierattn.data.tokenizer_process", str(int(TOKENIZER_MB.value))]
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 env=env)
        self._child = child
        self._send(json.dumps({"tokenizer": self.spec}))
        self._receive(max(30.0, TOKENIZER_SECONDS.value), "reading the tokenizer")
        return child

    def _send(self, line: str) -> None:
        self._child.stdin.write(line.encode("utf-8") + b"\n")
        self._child.stdin.flush()

    def _receive(self, seconds: float, what: str) -> dict:
        """The child's next answer, within ``seconds``; the child ended and an error otherwise."""
        deadline = time.monotonic() + seconds
        out = self._child.stdout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                self.close()
                raise LimitExceeded(f"the tokenizer did not finish {what} within {seconds:g} s, the limit "
                                    f"(set {TOKENIZER_SECONDS.variable} to raise it); it was stopped")
            line = out.readline()
            if not line:
                code = self._child.wait()
                self.close()
                raise LimitExceeded(f"the tokenizer stopped while {what} (exit code {code}): it needed more than "
                                    f"{TOKENIZER_MB.value:g} MB (set {TOKENIZER_MB.variable} to raise it)")
            answer = json.loads(line)
            if "error" in answer:
                raise ValueError(f"the tokenizer could not read this text: {answer['error'][:200]}")
            return answer

    def encode(self, text: str) -> Encoding:
        with self._lock:
            try:
                if self._child is None or self._child.poll() is not None:
                    self._start()
                self._send(json.dumps({"text": text}))
            except (BrokenPipeError, OSError):  # the child ended between texts: once more, fresh
                self.close()
                self._start()
                self._send(json.dumps({"text": text}))
            answer = self._receive(TOKENIZER_SECONDS.value, f"a text of {len(text):,} characters")
        return Encoding(answer["ids"], answer["tokens"], [tuple(o) for o in answer["offsets"]])

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  at interpreter exit the modules may be gone
            pass


KEPT_CHILDREN = 8  # tokenizers with a child kept per process; the least recently used is ended past it
_shared: OrderedDict[str, TokenizerProcess] = OrderedDict()
_shared_lock = threading.Lock()


def shared(spec: str) -> TokenizerProcess:
    """The process's one ``TokenizerProcess`` for the tokenizer.json ``spec``: a model opened again
    (another checkpoint of the same tokenizer, or the same folder reloaded) reuses its child."""
    key = hashlib.sha256(spec.encode("utf-8")).hexdigest()
    with _shared_lock:
        found = _shared.pop(key, None) or TokenizerProcess(spec)
        _shared[key] = found
        while len(_shared) > KEPT_CHILDREN:
            _, old = _shared.popitem(last=False)
            old.close()  # a later encode starts it again
        return found


def _child_main(memory_mb: int) -> None:
    import resource

    limit = memory_mb * 2 ** 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from tokenizers import Tokenizer

    tokenizer = None
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            if "tokenizer" in request:
                tokenizer = Tokenizer.from_str(request["tokenizer"])
                tokenizer.no_truncation()
                tokenizer.no_padding()
                answer = {"ready": True}
            else:
                encoding = tokenizer.encode(request["text"], add_special_tokens=False)
                answer = {"ids": encoding.ids, "tokens": encoding.tokens, "offsets": encoding.offsets}
        except (MemoryError, Exception) as error:  # noqa: BLE001  any failure is the paste's message
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _child_main(int(sys.argv[1]))
