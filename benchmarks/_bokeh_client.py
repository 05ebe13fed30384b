"""A browserless page visitor: the messages a page's BokehJS exchanges with the server.

Shared by ``load.py`` (slider moves under load) and ``bench_open.py`` (what opening a
page costs). :class:`WsVisitor` GETs the page (which creates the server session and
carries its token), opens the session's websocket, pulls the document, announces
``document_ready`` (Panel then runs the page's onload callbacks), and can then move the
first slider as a PATCH-DOC, value then throttled value, like one arrow-key step.

Opening records when each step finished, in seconds from the start of :meth:`WsVisitor.open`
(``first_byte``, ``html``, ``ack``, ``doc``, ``ready``), and the document's size and model
count. ``doc`` is the document pulled: what a browser paints first. ``ready`` is when the
page is complete: the server has acknowledged ``document_ready`` (Panel runs the page's
onload callbacks), and every slot of the first document that a page fills after its first
paint (``kit/deferred.py``: a column with the CSS class ``sdp-deferred`` and no children)
has received its children. That is the page's first screen: parts further down (a column with
the CSS class ``sdp-near``) are built when a visitor scrolls near them, which
:meth:`WsVisitor.reveal` does for all of them at once, as a browser does by setting each part's
``near`` mark, and times until every one has arrived (``revealed``).

Beyond sliders, the visitor can act on any widget of the page as a browser does
(:meth:`WsVisitor.change` sets a model's properties, :meth:`WsVisitor.click` presses a button),
find models in what it was sent (:meth:`WsVisitor.models`), and follow what the server writes
afterwards: every PATCH-DOC after the page is ready goes to each function in ``on_patch``
(``bench_class.py`` reads Episode 7's queue messages that way; :func:`model_changes` picks out
one property's new values).

The visitor can leave from a given loopback address (``source_ip``, e.g. ``127.0.5.1``),
so a proxy that keeps a visitor on one process by address (nginx's ``ip_hash``) spreads
many local visitors as it would a class.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid

#: ``specdec_playable.kit.deferred.DEFERRED_CLASS`` (repeated: benchmarks import no views).
DEFERRED_CLASS = "sdp-deferred"
#: ``specdec_playable.kit.deferred.NEAR_CLASS``.
NEAR_CLASS = "sdp-near"
REPLY_TIMEOUT_S = float(os.environ.get("SDP_REPLY_TIMEOUT", 30))
OPEN_TIMEOUT_S = float(os.environ.get("SDP_OPEN_TIMEOUT", 120))
MAX_MESSAGE = 50_000_000
MAX_CLIENTS = 1000
TOKEN = re.compile(r'"token":"([A-Za-z0-9_.\-]+)"')
# Attributes of Panel's Location model: the page's URL query follows the sliders.
URL_ATTRS = {"search", "href", "hash", "pathname"}


def find_models(node, predicate, out: list) -> list:
    """Every serialized Bokeh model in ``node`` (document order) for which ``predicate`` holds."""
    if isinstance(node, dict):
        if node.get("type") == "object" and predicate(node):
            out.append(node)
        for v in node.values():
            find_models(v, predicate, out)
    elif isinstance(node, list):
        for v in node:
            find_models(v, predicate, out)
    return out


def _empty_slot(node: dict) -> bool:
    a = node.get("attributes", {})
    return DEFERRED_CLASS in (a.get("css_classes") or []) and not a.get("children")


def _given_children(patch: dict) -> set:
    """The ids of the layouts a PATCH-DOC's events give children (a slot receiving its part)."""
    return {(e.get("model") or {}).get("id") for e in patch.get("events", [])
            if e.get("attr") == "children" and e.get("new")}


def _near_slot(node: dict) -> bool:
    return NEAR_CLASS in (node.get("attributes", {}).get("css_classes") or [])


def near_marks(node) -> dict[str, str]:
    """For each part built when near in ``node``: its slot's id -> the id of its mark's data
    model (the one whose ``near`` the browser sets)."""
    out = {}
    for slot in find_models(node, _near_slot, []):
        children = slot.get("attributes", {}).get("children") or []
        data = children[0].get("attributes", {}).get("data") if children else None
        if isinstance(data, dict) and "id" in data:
            out[slot["id"]] = data["id"]
    return out


def model_changes(patch: dict, attr: str) -> dict[str, object]:
    """Model id -> the new value of ``attr`` for every model a PATCH-DOC changes it on."""
    return {(e.get("model") or {}).get("id"): e.get("new") for e in patch.get("events", [])
            if e.get("kind") == "ModelChanged" and e.get("attr") == attr}


def count_models(doc: dict) -> int:
    """How many distinct models a serialized document holds (each id once)."""
    ids = {m["id"] for m in find_models(doc, lambda n: "id" in n, [])}
    return len(ids)


class WsVisitor:
    """One visitor speaking Bokeh's server protocol over the session's websocket."""

    def __init__(self, base: str, path: str, *, source_ip: str | None = None):
        self.base, self.path, self.source_ip = base, path, source_ip
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.opened: dict[str, float] = {}
        self.doc_bytes = 0
        self.n_models = 0
        self._t0: float | None = None
        self._msgid: str | None = None
        self._acked = False
        self._seen: list[str] = []
        self._closing = False
        self._reply: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        self._ready_id: str | None = None
        self._reader: asyncio.Task | None = None
        self.ws = None
        self.slider_id = None
        self._opening_patches: list[dict] = []
        self._slots: set | None = None  # known once the document is in
        self._filled: set = set()
        self._acked_ready = False
        self.near: dict[str, str] = {}  # part slot id -> its mark's data model id
        self._near_filled: set = set()
        self._revealed: asyncio.Event | None = None
        self.doc: dict | None = None  # the document pulled when the page opened
        self.on_patch: list = []  # called with each PATCH-DOC's content once the page is ready

    async def open(self, *, need_slider: bool = True) -> None:
        """Open the page as a browser would, up to a ready page (see the module doc)."""
        from tornado.httpclient import AsyncHTTPClient, HTTPRequest
        from tornado.websocket import websocket_connect

        # Tornado's client queues requests beyond ten at a time; a class arrives all at once.
        AsyncHTTPClient.configure(None, max_clients=MAX_CLIENTS)
        t0 = time.perf_counter()
        mark = lambda step: self.opened.setdefault(step, time.perf_counter() - t0)  # noqa: E731
        req = HTTPRequest(self.base + self.path, request_timeout=OPEN_TIMEOUT_S,
                          network_interface=self.source_ip,
                          header_callback=lambda _line: mark("first_byte"))
        page = await AsyncHTTPClient().fetch(req)
        mark("html")
        match = TOKEN.search(page.body.decode())
        if not match:
            raise RuntimeError(f"no session token in {self.path}")
        # A query (``?task=...``) travels in the session token, as a page's does; the websocket
        # is the app's path without it.
        ws_url = self.base.replace("http://", "ws://") + self.path.split("?", 1)[0] + "/ws"
        req = HTTPRequest(ws_url, headers={"Origin": self.base}, request_timeout=OPEN_TIMEOUT_S,
                          network_interface=self.source_ip)
        self.ws = await websocket_connect(req, subprotocols=["bokeh", match.group(1)],
                                          max_message_size=MAX_MESSAGE)
        # A page's websocket sends each small frame at once; so must we (no Nagle wait).
        self.ws.stream.set_nodelay(True)
        header, _ = await self._receive()
        if header["msgtype"] != "ACK":
            raise RuntimeError(f"expected ACK, got {header['msgtype']}")
        mark("ack")
        await self._send("PULL-DOC-REQ", {})
        header, content, size = await self._receive(with_size=True)
        if header["msgtype"] != "PULL-DOC-REPLY":
            raise RuntimeError(f"expected PULL-DOC-REPLY, got {header['msgtype']}")
        mark("doc")
        self._reply = asyncio.Event()
        self._ready = asyncio.Event()
        self._ready_id = uuid.uuid4().hex[:12]
        self._reader = asyncio.create_task(self._read_forever())
        # BokehJS announces a rendered page; Panel then runs its onload callbacks and starts
        # sending each callback's changes as one combined message.
        await self._send("PATCH-DOC", {"events": [{
            "kind": "MessageSent", "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": "document_ready", "values": {"type": "map"}}}]},
            self._ready_id)
        # Look at the document while the server works (not timed: a browser renders here).
        self.doc_bytes = size
        self.doc = content["doc"]
        self.n_models = count_models(content["doc"])
        self._slots = {m["id"] for m in find_models(content["doc"], _empty_slot, [])}
        self._check_ready("", {}, {})
        await asyncio.wait_for(self._ready.wait(), OPEN_TIMEOUT_S)
        mark("ready")
        self.near = near_marks(content["doc"])
        for patch in self._opening_patches:
            self.near.update(near_marks(patch))
        # The first slider: in the document, or in a part built after the first paint.
        is_slider = lambda n: n.get("name") == "Slider"  # noqa: E731
        sliders = find_models(content["doc"], is_slider, [])
        for patch in self._opening_patches:
            sliders += find_models(patch, is_slider, [])
        if sliders:
            s = sliders[0]
            a = s["attributes"]
            self.slider_id = s["id"]
            self.value, self.start, self.end = a["value"], a["start"], a["end"]
            self.step = a.get("step") or 1
        elif need_slider:
            raise RuntimeError(f"no slider on {self.path}")

    async def _send(self, msgtype: str, content: dict, msgid: str = "") -> None:
        header = {"msgid": msgid or uuid.uuid4().hex[:12], "msgtype": msgtype}
        for part in (json.dumps(header), "{}", json.dumps(content)):
            await self.ws.write_message(part)

    async def _receive(self, with_size: bool = False):
        """One Bokeh message: header, metadata and content frames, then two frames per buffer."""
        parts = []
        for _ in range(3):
            frame = await self.ws.read_message()
            if frame is None:
                raise ConnectionError("websocket closed by the server")
            parts.append(frame)
        header = json.loads(parts[0])
        size = sum(len(p) for p in parts)
        for _ in range(2 * header.get("num_buffers", 0)):
            frame = await self.ws.read_message()
            if frame is None:
                raise ConnectionError("websocket closed by the server")
            size += len(frame)
        out = (header, json.loads(parts[2]))
        return (*out, size) if with_size else out

    def _check_ready(self, kind: str, header: dict, content: dict) -> None:
        if kind == "PATCH-DOC":
            self._opening_patches.append(content)
            self._filled |= _given_children(content)
        elif kind == "OK" and header.get("reqid") == self._ready_id:
            self._acked_ready = True
        if self._acked_ready and self._slots is not None and self._slots <= self._filled:
            self._ready.set()

    async def _read_forever(self) -> None:
        try:
            while True:
                header, content = await self._receive()
                kind = header["msgtype"]
                if not self._ready.is_set():
                    self._check_ready(kind, header, content)
                elif self._revealed is not None and kind == "PATCH-DOC":
                    self._near_filled |= _given_children(content)
                    if set(self.near) <= self._near_filled:
                        self._revealed.set()
                if kind == "PATCH-DOC" and self._ready.is_set():
                    for fn in self.on_patch:
                        fn(content)
                if self._t0 is not None:
                    self._seen.append(kind + "(" + ",".join(
                        str(e.get("attr") or e.get("kind")) for e in content.get("events", [])) + ")")
                if kind == "ERROR":
                    self.errors.append(f"server ERROR on {self.path}: {str(content)[:120]}")
                elif kind == "OK" and header.get("reqid") == self._msgid:
                    self._acked = True
                elif kind == "PATCH-DOC" and self._t0 is not None and self._acked and any(
                        self._is_content(e) for e in content.get("events", [])):
                    self.latencies.append((time.perf_counter() - self._t0) * 1000)
                    self._t0 = None
                    self._reply.set()
        except ConnectionError as exc:
            if not self._closing:
                self.errors.append(f"{self.path}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a dead reader must show up as an error
            self.errors.append(f"{self.path}: reader stopped: {type(exc).__name__}: {exc}")

    def _is_content(self, event: dict) -> bool:
        """A recomputed chart or text, not the URL query or the slider's own value."""
        model = (event.get("model") or {}).get("id")
        return model != self.slider_id and event.get("attr") not in URL_ATTRS

    def models(self, predicate) -> list[dict]:
        """The models of the document as it opened (with the parts filled after the first
        paint) for which ``predicate`` holds, in document order."""
        out = find_models(self.doc, predicate, [])
        for patch in self._opening_patches:
            find_models(patch, predicate, out)
        return out

    async def change(self, model_id: str, **attrs) -> None:
        """Set properties of one model, as BokehJS does when a visitor edits a widget."""
        await self._send("PATCH-DOC", {"events": [
            {"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": new}
            for attr, new in attrs.items()]})

    async def click(self, model_id: str) -> None:
        """Press a button: the ``button_click`` event a browser's click sends."""
        await self._send("PATCH-DOC", {"events": [{
            "kind": "MessageSent", "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": "button_click",
                         "values": {"type": "map", "entries": [["model", {"id": model_id}]]}}}]})

    async def move(self, i: int) -> None:
        up = self.value + self.step
        self.value = up if up <= self.end else self.value - self.step
        self.value = round(self.value, 6)
        self._reply.clear()
        self._seen = []
        # The server acknowledges the value (OK) before Panel's 50 ms debounce runs the
        # recompute, so the first content change after that OK answers this move, not the
        # tail of the previous one. (Under load the recompute can go out before the OK of
        # the throttled value, so the gate is the first message's OK.)
        self._acked, self._msgid = False, uuid.uuid4().hex[:12]
        self._t0 = time.perf_counter()
        # What BokehJS sends for one arrow-key step: the value, then the throttled value.
        for attr in ("value", "value_throttled"):
            await self._send("PATCH-DOC", {"events": [
                {"kind": "ModelChanged", "model": {"id": self.slider_id}, "attr": attr,
                 "new": self.value}]}, self._msgid if attr == "value" else "")
        try:
            await asyncio.wait_for(self._reply.wait(), REPLY_TIMEOUT_S)
        except TimeoutError:
            self._t0 = None
            self.errors.append(f"no reply on {self.path} within {REPLY_TIMEOUT_S:.0f} s after "
                               f"value {self.value}; saw {' '.join(self._seen)[:200]}")

    async def reveal(self, t0: float | None = None) -> None:
        """Have every part built when near built, as a browser scrolled through the page does;
        records ``revealed`` (seconds from ``t0``, by default from now) once all have arrived."""
        t0 = time.perf_counter() if t0 is None else t0
        self._revealed = asyncio.Event()
        if not self.near:
            self.opened["revealed"] = time.perf_counter() - t0
            return
        await self._send("PATCH-DOC", {"events": [
            {"kind": "ModelChanged", "model": {"id": mark}, "attr": "near", "new": True}
            for mark in self.near.values()]})
        await asyncio.wait_for(self._revealed.wait(), OPEN_TIMEOUT_S)
        self.opened["revealed"] = time.perf_counter() - t0

    async def close(self) -> None:
        self._closing = True
        if self.ws is not None:
            self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
