"""What does opening a page cost the server, and what does a class that opens one at once wait?

Two runs, both with the browserless visitor of ``_bokeh_client.py`` (the messages a page's
BokehJS exchanges with the server, nothing drawn), so the server gets the whole CPU:

1. **Opening figures.** One ``specdec-playable serve`` process serves the site and, beside
   it, a bare Panel page (one slider, one Bokeh figure with a line). Each page is opened by
   one visitor at a time, ``--repeats`` times, in a shuffled order per round so a drifting
   machine load hits every page alike. Per open: the time to the first byte of the HTML
   (the server builds the session's page before it answers), to the first paint (the
   document pulled over the websocket: what a browser draws first) and to the complete
   page (the server acknowledged ``document_ready``, after the parts a page builds after
   its first paint have been sent), plus the server's CPU time. Parts further down a long
   page are built when a visitor scrolls near them (``kit/deferred.py``); after the
   complete first screen the visitor asks for all of them at once, as if it scrolled to the
   end, and the table gives how many there are, how long they took to arrive and the
   server's CPU time for the whole page. The table gives medians and each page's ratios to
   the bare page's medians *in the same run*; the target is every episode <= 2x. A second
   table splits the server's thread CPU time for the first screen by phase.

2. **A class arrives.** ``--class-size`` visitors (60) open one episode, each starting at a
   random moment within ``--class-window`` seconds (1 s), on 1 and on 2 server processes
   behind nginx configured as in docs/serving.md (``ip_hash`` upstream, websocket upgrade
   headers; each process with ``--use-xheaders``). Every visitor leaves from its own
   loopback address (``127.0.<i>.1``), so ``ip_hash`` spreads them as it would a class
   behind distinct addresses; the split per process is read from nginx's access log.
   Reports the p95 time to the first paint and p50/p95/max to the complete page (its first
   screen, the parts further down not asked for), and errors; target with 2 processes:
   complete p95 <= 10 s, no errors. With ``--class-scrolls`` every visitor also asks for
   the parts further down as soon as its first screen is complete (a class that scrolls to
   the end at once, the worst case), and the time until they arrive is reported. Servers are started
   fresh for each process count, and each page's sessions are closed and freed before the
   next page's class arrives.

Usage::

    python benchmarks/bench_open.py                        # both runs, every episode
    python benchmarks/bench_open.py --repeats 9 --no-class # opening figures only
    python benchmarks/bench_open.py --no-open --pages ep3_the_quality_dial --procs 2

Comparing two versions of the code: ``PYTHONPATH=<other checkout>/src python
benchmarks/bench_open.py`` runs this script against the other package (the bare page is
added by this script, whatever the version). Only loopback traffic; every wait is bounded.
This measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bokeh_client import WsVisitor
from _local import cpu_seconds, free_port, pct, start_server, wait_live

BARE = "bare_panel_page"
TARGET_RATIO = 2.0
TARGET_P95_S = 10.0
#: How long a closed session is kept, and how often the server looks, in the class run:
#: short, so each page's class is freed before the next one arrives.
CLASS_LIFETIME_MS, CLASS_CHECK_MS = 1000, 500


def bare_page():
    """The reference: one slider and one Bokeh figure whose line follows it."""
    import numpy as np
    import panel as pn
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    xs = np.linspace(0, 1, 50)
    src = ColumnDataSource(dict(x=xs, y=xs * 0.8))
    fig = figure(height=330, sizing_mode="stretch_width", tools="", toolbar_location=None,
                 y_range=(0, 1))
    fig.line("x", "y", source=src, line_width=3)
    slider = pn.widgets.FloatSlider(name="a", start=0, end=1, step=0.01, value=0.8)
    slider.param.watch(lambda e: setattr(src, "data", dict(x=xs, y=xs * e.new)), "value")
    return pn.Column(slider, pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                     sizing_mode="stretch_width", max_width=1100)


#: Where a server's time goes while it opens a page: the library functions each phase runs in.
PHASES = {
    "build": ("panel.io.application", "Application", "initialize_document"),
    "html": ("panel.io.server", None, "server_html_page_for_session"),
    "document": ("bokeh.server.session", None, "_serialize_pull_reply"),
    "patches in": ("bokeh.protocol.messages.patch_doc", "patch_doc", "apply_to_document"),
    "patches out": ("bokeh.server.session", None, "_serialize_patches"),
}
PHASE_TAG = "sdp-bench-phase"


def _time_phases() -> None:
    """Print one line per call of each phase: the page's path, its document, the phase, thread CPU ms.

    Thread CPU time, not wall time: Bokeh runs these phases on worker threads, and a thread
    waiting for the GIL or for a core is not using one.
    """
    import importlib

    def path_of(doc) -> str:
        ctx = getattr(doc, "session_context", None)
        req = getattr(ctx, "request", None) if ctx is not None else None
        return getattr(req, "path", "?") if req is not None else "?"

    for phase, (module, cls, name) in PHASES.items():
        owner = importlib.import_module(module)
        owner = getattr(owner, cls) if cls else owner
        original = getattr(owner, name)

        def timed(*args, _original=original, _phase=phase, **kwargs):
            t0 = time.thread_time()
            try:
                return _original(*args, **kwargs)
            finally:
                doc = next((a for a in args if hasattr(a, "session_context")), None)
                if doc is None and args and hasattr(args[0], "document"):
                    doc = args[0].document  # a session
                if doc is None and args and isinstance(args[0], list) and args[0]:
                    doc = args[0][0].event.document  # pending patches
                # One write per line: the server's log lines come from other threads too.
                sys.stdout.write(f"{PHASE_TAG} {path_of(doc)} {id(doc)} {_phase} "
                                 f"{1000 * (time.thread_time() - t0):.2f}\n")
                sys.stdout.flush()

        setattr(owner, name, timed)


def serve_with_bare(argv: list[str]) -> int:
    """``specdec-playable serve ARGV`` with the bare page added at ``/bare_panel_page``.

    The page is added by wrapping ``site.applications`` and ``site.titles``, which every
    version of the package has, so before/after runs serve the same bare page through the
    same code. With ``--phases`` first, the server also prints where its time goes.
    """
    from specdec_playable.app import cli
    from specdec_playable.app import site

    if argv[:1] == ["--phases"]:
        argv = argv[1:]
        _time_phases()

    episodes, titles = site.applications, site.titles
    site.applications = lambda *a, **kw: {**episodes(*a, **kw), BARE: bare_page}
    site.titles = lambda *a, **kw: {**titles(*a, **kw), BARE: "Bare Panel page"}
    return cli.main(["serve", *argv])


# --- run 1: opening figures ------------------------------------------------------------------


async def open_once(base: str, path: str, pid: int) -> dict:
    v = WsVisitor(base, path)
    cpu0 = cpu_seconds(pid)
    try:
        await v.open(need_slider=False)
        await asyncio.sleep(0.05)  # let the server finish its replies before reading its CPU time
        cpu_first = cpu_seconds(pid) - cpu0
        await v.reveal()
    finally:
        await v.close()
    await asyncio.sleep(0.05)
    return dict(v.opened, cpu=cpu_first, cpu_all=cpu_seconds(pid) - cpu0, kb=v.doc_bytes / 1000,
                models=v.n_models, parts=len(v.near), errors=len(v.errors))


async def opening_figures(pages: list[str], repeats: int) -> dict:
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"specdec-bench-open-{port}.log"
    proc = start_server(port, log, command=[sys.executable, __file__, "--serve", "--phases"])
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(7)
    results: dict[str, list[dict]] = {p: [] for p in pages}
    try:
        for p in pages:  # warm up: the first open of a page pays imports and process caches
            await open_once(base, "/" + p, proc.pid)
        await asyncio.sleep(0.2)
        warm_log = log.stat().st_size
        for _ in range(repeats):
            order = list(pages)
            rng.shuffle(order)
            for p in order:
                results[p].append(await open_once(base, "/" + p, proc.pid))
    finally:
        proc.terminate()
        proc.wait(10)
    per_doc: dict[tuple[str, str], dict[str, float]] = {}
    with open(log, "rb") as f:
        f.seek(warm_log)
        for line in f.read().decode(errors="replace").splitlines():
            parts = line.split()
            if parts[:1] != [PHASE_TAG] or len(parts) < 5 or parts[1].lstrip("/") not in results:
                continue
            phase = " ".join(parts[3:-1])
            try:
                ms = float(parts[-1])
            except ValueError:
                continue
            if phase in PHASES:
                doc = per_doc.setdefault((parts[1].lstrip("/"), parts[2]), dict.fromkeys(PHASES, 0.0))
                doc[phase] += ms
    # Per page, the median open's time in each phase (medians resist a busy machine's outliers).
    phases = {p: {k: statistics.median([d[k] for (page, _), d in per_doc.items() if page == p] or [0])
                  for k in PHASES} for p in pages}
    return results, phases


def print_phases(phases: dict) -> None:
    print("## Where the server's time goes when a page opens (thread CPU ms, median open)\n")
    print("| page | " + " | ".join(PHASES) + " | sum |")
    print("|---|" + "---:|" * (len(PHASES) + 1))
    for p, ph in phases.items():
        print(f"| {'bare Panel page' if p == BARE else p} | "
              + " | ".join(f"{ph[k]:.0f}" for k in PHASES) + f" | {sum(ph.values()):.0f} |")
    print("\nThe first screen (parts built on scroll run after these phases, in a callback of their "
          "own). build: the page function, its Bokeh models and the session's document; html: the "
          "page's HTML (resources, template); document: the document serialized for the "
          "websocket; patches in: applying the browser's messages (document_ready runs the "
          "onload callbacks); patches out: serializing changes sent to the browser.\n")


def print_opening(results: dict, repeats: int) -> bool:
    def med(p, key):
        return statistics.median(r[key] for r in results[p])

    print(f"## Opening a page: one visitor at a time, median of {repeats} opens per page, "
          "one server process\n")
    print("| page | first byte of HTML | first paint (document pulled) | complete (ready) | "
          "first byte / bare | first paint / bare | complete / bare | server CPU per open | "
          "first document | its models | parts built on scroll | their arrival | "
          "server CPU, whole page |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    missed = []
    for p in results:
        ratios = [med(p, k) / med(BARE, k) for k in ("first_byte", "doc", "ready")]
        if p != BARE:
            missed += [f"{p} ({what})" for what, r in zip(("first byte", "first paint", "complete"),
                                                            ratios) if r > TARGET_RATIO]
        print(f"| {'bare Panel page' if p == BARE else p} | {1000 * med(p, 'first_byte'):.0f} ms | "
              f"{1000 * med(p, 'doc'):.0f} ms | {1000 * med(p, 'ready'):.0f} ms | "
              + " | ".join(f"{r:.2f}x" for r in ratios)
              + f" | {1000 * med(p, 'cpu'):.0f} ms | {med(p, 'kb'):.1f} kB | {med(p, 'models'):.0f} | "
              + (f"{med(p, 'parts'):.0f} | {1000 * med(p, 'revealed'):.0f} ms | "
                 f"{1000 * med(p, 'cpu_all'):.0f} ms |" if med(p, "parts") else "0 | | |"))
    errors = sum(r["errors"] for rs in results.values() for r in rs)
    print(f"\nerrors: {errors}. Target: every episode <= {TARGET_RATIO:g}x the bare page, same run: "
          + ("MET" if not missed and not errors else "NOT MET for " + ", ".join(missed)) + "\n")
    return not missed and not errors


# --- run 2: a class arrives --------------------------------------------------------------------

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstream '$remote_addr $upstream_addr $status $request_uri';
    access_log {tmp}/access.log upstream;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    # As in docs/serving.md: sticky by address, websocket upgrades forwarded.
    upstream specdec {{
        ip_hash;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://specdec;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout 3600s;
        }}
    }}
}}
"""


class Proxy:
    """nginx on loopback ``port`` in front of ``ports``, run from a scratch folder."""

    def __init__(self, port: int, ports: list[int]):
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(nginx).exists():
            raise SystemExit("nginx is needed for the class run: apt-get install -y nginx-light "
                             "(or run with --no-class)")
        self.tmp = Path(tempfile.mkdtemp(prefix="specdec-nginx-"))
        self.port = port
        servers = "\n".join(f"        server 127.0.0.1:{p};" for p in ports)
        conf = self.tmp / "nginx.conf"
        conf.write_text(NGINX_CONF.format(tmp=self.tmp, servers=servers, port=self.port))
        self.proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(self.tmp)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            wait_live(f"http://127.0.0.1:{self.port}", self.proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}: {(self.tmp / 'error.log').read_text()[-500:]}") from None

    def split(self, path: str) -> dict[str, int]:
        """How many of ``path``'s page requests each upstream answered (from the access log)."""
        out: dict[str, int] = {}
        for line in (self.tmp / "access.log").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[3].split("?")[0] == path:
                out[parts[1]] = out.get(parts[1], 0) + 1
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.tmp, ignore_errors=True)


async def class_arrives(base: str, path: str, size: int, window: float, seed: int,
                        scrolls: bool = False) -> dict:
    rng = random.Random(seed)
    starts = sorted(rng.uniform(0, window) for _ in range(size))
    visitors = [WsVisitor(base, path, source_ip=f"127.0.{i + 1}.1") for i in range(size)]
    t0 = time.perf_counter()

    async def arrive(v: WsVisitor, at: float):
        await asyncio.sleep(max(0.0, at - (time.perf_counter() - t0)))
        try:
            await v.open()
            if scrolls:
                await v.reveal(t0=t0 + at)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not crash
            v.errors.append(f"{type(exc).__name__}: {exc}"[:200])

    await asyncio.gather(*(arrive(v, at) for v, at in zip(visitors, starts)))
    took = time.perf_counter() - t0
    ready = [v.opened["ready"] for v in visitors if "ready" in v.opened]
    doc = [v.opened["doc"] for v in visitors if "doc" in v.opened]
    revealed = [v.opened["revealed"] for v in visitors if "revealed" in v.opened]
    errors = [e for v in visitors for e in v.errors]
    for v in visitors:
        await v.close()
    return dict(ready=ready, doc=doc, revealed=revealed, scrolls=scrolls, errors=errors, took=took)


async def class_runs(pages: list[str], procs_list: list[int], size: int, window: float,
                     scrolls: bool = False) -> list:
    rows = []
    for n_procs in procs_list:
        ports = [free_port() for _ in range(n_procs)]
        proxy_port = free_port()
        proxy, servers = None, []
        try:
            for port in ports:
                log = Path(tempfile.gettempdir()) / f"specdec-bench-class-{port}.log"
                servers.append(start_server(
                    port, log, "--use-xheaders",
                    "--allow-websocket-origin", f"127.0.0.1:{proxy_port}",
                    "--unused-session-lifetime", str(CLASS_LIFETIME_MS),
                    "--check-unused-sessions", str(CLASS_CHECK_MS)))
            proxy = Proxy(proxy_port, ports)
            base = f"http://127.0.0.1:{proxy.port}"
            for i, page in enumerate(pages):
                cpu0 = sum(cpu_seconds(s.pid) for s in servers)
                r = await class_arrives(base, "/" + page, size, window, seed=100 + i,
                                        scrolls=scrolls)
                r.update(page=page, procs=n_procs, split=sorted(proxy.split("/" + page).values()),
                         cpu=sum(cpu_seconds(s.pid) for s in servers) - cpu0,
                         load=os.getloadavg()[0])
                rows.append(r)
                print_class_row(r, size)
                await asyncio.sleep(3 * (CLASS_LIFETIME_MS + CLASS_CHECK_MS) / 1000)
        finally:
            if proxy is not None:
                proxy.stop()
            for s in servers:
                s.terminate()
            for s in servers:
                s.wait(10)
    return rows


CLASS_HEADER = ("| page | processes | visitors per process | errors | first paint p95 | "
                "complete p50 | complete p95 | complete max | server CPU | load avg | target |\n"
                "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")


def print_class_row(r: dict, size: int) -> None:
    ok = not r["errors"] and len(r["ready"]) == size and pct(r["ready"], 95) <= TARGET_P95_S
    target = ("MET" if ok else "NOT MET") if r["procs"] == 2 else ""
    print(f"| {r['page']} | {r['procs']} | {' + '.join(map(str, r['split']))} | {len(r['errors'])} | "
          f"{pct(r['doc'], 95):.1f} s | {pct(r['ready'], 50):.1f} s | {pct(r['ready'], 95):.1f} s | "
          f"{max(r['ready'], default=float('nan')):.1f} s | {r['cpu']:.1f} s | {r['load']:.1f} | "
          f"{target} |", flush=True)
    if r["scrolls"]:
        print(f"|   and every visitor scrolled to the end at once: the whole page p50 "
              f"{pct(r['revealed'], 50):.1f} s, p95 {pct(r['revealed'], 95):.1f} s, max "
              f"{max(r['revealed'], default=float('nan')):.1f} s |", flush=True)
    for e in r["errors"][:3]:
        print(f"|   error: {e[:150]} |", flush=True)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--serve":
        return serve_with_bare(sys.argv[2:])
    from specdec_playable.episodes import EPISODES

    slugs = [e.slug for e in EPISODES]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="opens per page in the first run")
    ap.add_argument("--pages", nargs="+", default=slugs, choices=slugs, metavar="SLUG")
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 2], help="process counts to run")
    ap.add_argument("--class-size", type=int, default=60)
    ap.add_argument("--class-window", type=float, default=1.0)
    ap.add_argument("--no-open", action="store_true", help="skip the opening figures")
    ap.add_argument("--no-class", action="store_true", help="skip the class runs")
    ap.add_argument("--class-scrolls", action="store_true",
                    help="in the class runs, every visitor asks for the parts further down as soon "
                         "as its first screen is complete")
    args = ap.parse_args(argv)
    if not (1 <= args.repeats <= 100 and 1 <= args.class_size <= 250
            and 0 <= args.class_window <= 60 and all(1 <= n <= 8 for n in args.procs)):
        ap.error("repeats in [1, 100], class-size in [1, 250], class-window in [0, 60] s, "
                 "procs in [1, 8]")

    import bokeh
    import panel

    import specdec_playable

    print(f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, panel {panel.__version__}, bokeh {bokeh.__version__}; "
          f"package from {Path(specdec_playable.__file__).parent}; load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the start\n")
    if not args.no_open:
        results, phases = asyncio.run(opening_figures([BARE, *args.pages], args.repeats))
        print_opening(results, args.repeats)
        print_phases(phases)
    if not args.no_class:
        print(f"## A class arrives: {args.class_size} visitors open one page within "
              f"{args.class_window:g} s, behind nginx (ip_hash); time from a visitor's arrival "
              "to its first paint (document pulled) and to its complete page (ready)\n")
        print(CLASS_HEADER, flush=True)
        asyncio.run(class_runs(args.pages, args.procs, args.class_size, args.class_window,
                               args.class_scrolls))
        print(f"\nTarget with 2 processes: p95 <= {TARGET_P95_S:g} s and no errors.")
    print(f"\nload average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
