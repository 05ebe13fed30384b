"""SmolLM2's tokenizer, built with ``tokenizers`` from the vocabulary and merges in the GGUF file.

Byte-level BPE as in GPT-2, with digits split one by one before it (the file's ``smollm``
pre-tokenizer). Control tokens such as ``<|im_start|>`` are never produced from text: a prompt that
contains the characters ``<|im_end|>`` stays ordinary text, and the chat template inserts the control
tokens by id, so a visitor's text cannot forge a turn of the conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The chat template's default system turn (from the file's ``tokenizer.chat_template``).
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


class Tokenizer:
    """Text to token ids and back, plus the ChatML prompt of the instruct model.

    Parameters
    ----------
    tokens : sequence of str
        The vocabulary, in id order (byte-level strings, as GGUF stores them).
    merges : sequence of str
        BPE merges, ``"a b"`` each, in priority order.
    control : sequence of int
        Ids of control tokens (``<|endoftext|>``, ``<|im_start|>``, ...).
    bos_id, eos_id : int
        Beginning- and end-of-sequence ids.

    Examples
    --------
    >>> tok = get_model().tokenizer                        # doctest: +SKIP
    >>> tok.decode(tok.encode("def f(x):"))               # doctest: +SKIP
    'def f(x):'
    """

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], control: Sequence[int],
                 bos_id: int, eos_id: int) -> None:
        from tokenizers import Tokenizer as _HFTokenizer
        from tokenizers import decoders, models, pre_tokenizers

        vocab = {t: i for i, t in enumerate(tokens)}
        pairs = [tuple(m.split(" ", 1)) for m in merges]
        bpe = models.BPE(vocab=vocab, merges=pairs, fuse_unk=False)
        tok = _HFTokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
        tok.decoder = decoders.ByteLevel()
        self._tok = tok
        self.vocab_size = len(tokens)
        self.control = frozenset(int(i) for i in control)
        self.bos_id = int(bos_id)
        self.eos_id = int(eos_id)
        self.im_start = vocab["<|im_start|>"]
        self.im_end = vocab["<|im_end|>"]
        self._texts: tuple[str, ...] | None = None

    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (control tokens are never produced)."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        """The text of a run of ids (control tokens spelled out)."""
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        """The text of one token as a page shows it (a partial UTF-8 character shows as U+FFFD; a
        control token as a bracketed word, never its raw spelling: the end of a reply
        (``<|im_end|>``, the end-of-sequence token) is ``[end]``, ``<|im_start|>`` ``[start]``)."""
        if self._texts is None:
            texts = list(self._tok.decode_batch([[i] for i in range(self.vocab_size)],
                                                skip_special_tokens=False))
            for i in self.control:
                name = self._tok.id_to_token(i) or ""
                texts[i] = "[" + (name.strip("<|>") or "control") + "]"
            for i in {self.eos_id, self.im_end}:
                texts[i] = "[end]"
            texts[self.im_start] = "[start]"
            self._texts = tuple(texts)
        return self._texts[int(token_id)]

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (a piece of a UTF-8 character stays a piece)."""
        return _byte_level_bytes(self._tok.id_to_token(int(token_id)))

    def chat(self, user: str, *, system: str | None = DEFAULT_SYSTEM) -> list[int]:
        """Ids of a one-turn ChatML prompt ending where the assistant starts to write."""
        nl = self.encode("\n")
        ids: list[int] = []
        if system is not None:
            ids += [self.im_start, *self.encode("system\n" + system), self.im_end, *nl]
        ids += [self.im_start, *self.encode("user\n" + user), self.im_end, *nl]
        ids += [self.im_start, *self.encode("assistant\n")]
        return ids

    def as_array(self, ids) -> np.ndarray:
        """Ids as an int64 array, each checked to be in the vocabulary."""
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size - 1}]")
        return arr


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet, inverted: each printable stand-in character -> its byte."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars)}


_BYTES = _byte_alphabet()


def _byte_level_bytes(piece: str) -> bytes:
    return bytes(_BYTES[ch] for ch in piece)
