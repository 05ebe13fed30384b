"""Command line: ``specdec-playable [serve|simulate|generate|calibrate|export] ...``."""

from __future__ import annotations

import argparse
import json
import sys

from ..lm.model import WEIGHT_FORMATS
from ..sim.validate import K_DEFAULT

SERVE_EPILOG = "With no command, `specdec-playable` runs `serve` with its defaults."


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (status 2), never a traceback."""

    def error(self, message):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be an integer; got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in [1, 65535]; got {value}")
    return value


def _int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}]; got {value}")
        return value
    parse.__name__ = "integer"
    return parse


PROMPT_MAX_CHARS = 8000


def _prompt(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if len(text) > PROMPT_MAX_CHARS:
        raise argparse.ArgumentTypeError(f"must be at most {PROMPT_MAX_CHARS} characters; got {len(text)}")
    return text


def _real_in(lo: float, hi: float, lo_open: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number; got {text!r}") from None
        if not (lo < value if lo_open else lo <= value) or not value <= hi:
            raise argparse.ArgumentTypeError(
                f"must be in {'(' if lo_open else '['}{lo:g}, {hi:g}]; got {text}")
        return value
    parse.__name__ = "number"
    return parse


def _origin(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"origin must look like HOST:PORT; got {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specdec-playable",
                     description="Speculative Decoding, Playable: serve the explainer or run its simulation.",
                     epilog=SERVE_EPILOG)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _serve_parser(sub)
    _simulate_parser(sub)
    _generate_parser(sub)
    _calibrate_parser(sub)
    e = sub.add_parser("export", help="write a static Pyodide build of every episode plus an index")
    e.add_argument("dest", metavar="DIR", help="folder to write (created if missing)")
    e.add_argument("--episode", action="append", default=None, metavar="SLUG",
                   help="export only this episode (repeatable)")
    e.add_argument("--wheel", default=None,
                   help="a prebuilt specdec_playable wheel (default: build one from this checkout)")
    return parser


def _serve_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve the index and every episode (default)")
    s.add_argument("--port", type=_port, default=5006, help="port to listen on (default 5006)")
    s.add_argument("--address", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--allow-websocket-origin", action="append", default=[], type=_origin,
                   metavar="HOST:PORT",
                   help="also accept pages served from this origin (repeatable), e.g. a course site")
    s.add_argument("--show", action="store_true", help="open the site in a browser")
    s.add_argument("--weights", choices=WEIGHT_FORMATS, default="f32",
                   help="the model's weights in its processes: f32 (dequantised to float32, the "
                   "default) or q4 (the file's 4-bit blocks, read as stored)")
    s.add_argument("--no-model-at-start", action="store_true",
                   help="load the model on the first run instead of at start (the pages then price "
                        "a CPU pass with the shipped measurement until a run has loaded it)")
    s.add_argument("--use-xheaders", action="store_true",
                   help="trust X-Forwarded-* headers (only behind a reverse proxy)")
    s.add_argument("--unused-session-lifetime", type=_int_in(100, 86_400_000), default=15000,
                   metavar="MS",
                   help="how long a closed page's session is kept before it is freed (default 15000)")
    s.add_argument("--check-unused-sessions", type=_int_in(100, 86_400_000), default=17000,
                   metavar="MS",
                   help="how often to look for sessions to free (default 17000)")


def _simulate_parser(sub) -> None:
    m = sub.add_parser("simulate", help="Monte-Carlo speedup beside the closed-form theory")
    m.add_argument("--q", type=float, required=True, help="draft acceptance probability, in [0, 1]")
    m.add_argument("--k", type=int, required=True, help="tokens drafted per round, in [1, 64]")
    m.add_argument("--c", type=float, required=True,
                   help="draft step cost as a fraction of a big pass, in [0, 10]")
    m.add_argument("--rounds", type=int, default=2000, help="rounds to simulate (default 2000)")
    m.add_argument("--seed", type=int, default=None,
                   help="seed for a reproducible run (default: fresh randomness)")
    m.add_argument("--json", action="store_true", help="print one JSON object")


def _draft_name(text: str) -> str:
    """A draft's key (``learned``, the n-gram table's old name, still finds it)."""
    from ..lm.registry import draft_key

    try:
        return draft_key(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _draft_help() -> str:
    from ..lm.registry import DRAFTS

    names = ", ".join(f"{k} ({d.short}: {d.what})" for k, d in DRAFTS.items())
    return f"what proposes tokens: {names}; default lookup ('learned' still means ngram)"


def _generate_parser(sub) -> None:
    g = sub.add_parser("generate", help="run the real model: plain and speculative decoding, side by side",
                       description="Write a reply with SmolLM2-135M twice, plainly and with a draft, "
                                   "taking turns pass by pass so that both meet the same load, and "
                                   "compare the two runs (speedup with a bootstrap interval).")
    g.add_argument("--prompt", required=True, type=_prompt, metavar="TEXT",
                   help="the user's message (sent with the model's chat template)")
    g.add_argument("--draft", type=_draft_name, default="lookup", metavar="NAME", help=_draft_help())
    g.add_argument("--k", type=_int_in(1, 16), default=K_DEFAULT,
                   help=f"most tokens drafted per round, 1-16 (default {K_DEFAULT})")
    g.add_argument("--max-new", type=_int_in(1, 1024), default=64, metavar="N",
                   help="token budget, 1-1024 (default 64)")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--greedy", action="store_true", help="greedy decoding (the default)")
    mode.add_argument("--temperature", type=_real_in(0.0, 10.0, lo_open=True), default=None, metavar="T",
                      help="sample at this temperature, in (0, 10]")
    g.add_argument("--top-p", type=_real_in(0.0, 1.0, lo_open=True), default=1.0, metavar="P",
                   help="nucleus sampling mass, in (0, 1] (default 1)")
    g.add_argument("--seed", type=_int_in(0, 2**63 - 1), default=None, metavar="N",
                   help="seed for sampling (default: fresh randomness)")
    g.add_argument("--weights", choices=WEIGHT_FORMATS, default="f32",
                   help="the model's weights: f32 (dequantised to float32, the default) or q4 (the "
                   "file's 4-bit blocks, read as stored)")
    g.add_argument("--json", action="store_true", help="print one JSON object")


def _calibrate_parser(sub) -> None:
    from ..lm.calibrate import BUDGET_S, QUANTILE

    c = sub.add_parser("calibrate", help="time this machine's forward passes, as a server does once at start",
                       description="Time forward passes of the real model over 1 to 32 new positions "
                                   "here and now, and print the record a server keeps (when, which "
                                   f"CPU, threads, weight format; each size's {QUANTILE:.0%} quantile "
                                   "of interleaved repeats, never falling as the positions grow).")
    c.add_argument("--weights", choices=(*WEIGHT_FORMATS, "both"), default="f32",
                   help="the weight format to time: f32 (the default), q4, or both, one after the other")
    c.add_argument("--budget", type=_real_in(0.0, 60.0, lo_open=True), default=BUDGET_S, metavar="S",
                   help=f"seconds the timing may take per format, in (0, 60] (default {BUDGET_S:g}; "
                        "a loaded machine may take a round longer)")
    c.add_argument("--json", action="store_true", help="print one JSON object, keyed by weight format")


def _calibrate(args) -> int:
    from ..lm import ModelNotInstalled, get_model
    from ..runtime.calibration import measure

    formats = WEIGHT_FORMATS if args.weights == "both" else (args.weights,)
    made = {}
    for fmt in formats:
        print(f"specdec-playable calibrate: loading the model ({fmt})...", file=sys.stderr, flush=True)
        try:
            model = get_model(fmt)
        except ModelNotInstalled as exc:
            print(f"specdec-playable calibrate: error: the model is not installed; run: {exc.command}",
                  file=sys.stderr)
            return 1
        print(f"specdec-playable calibrate: timing passes ({fmt}, up to about {args.budget:g} s)...",
              file=sys.stderr, flush=True)
        made[fmt] = measure(model, budget_s=args.budget)
    if args.json:
        print(json.dumps({fmt: rec.to_json() for fmt, rec in made.items()}))
    else:
        print("\n\n".join(calibration_table(rec) for rec in made.values()))
    return 0


def calibration_table(record) -> str:
    """A :class:`.calibration.Calibration` as ``calibrate`` prints it: the stamp, one row per size
    (milliseconds, times a one-position step), then how it was measured."""
    t = record.times
    rows = [f"{n:>9}  {ms:8.2f}  {ms / t.ms[0]:6.2f}x" for n, ms in zip(t.n_positions, t.ms)]
    how = (f"{t.repeats} interleaved rounds, {t.quantile:.0%} quantile of each size's passes; "
           f"{t.retimed} extra round{'s' if t.retimed != 1 else ''} for sizes where it fell; "
           + (f"still fell, so the minimum from the right lowered {', '.join(map(str, t.lowered))}"
              if t.enforced else "never falls as the positions grow")
           + f"; {t.seconds:.1f} s, {t.kernel} kernel")
    stamp = record.stamp()
    return "\n".join([stamp[0].upper() + stamp[1:],
                      "positions        ms  x step", *rows, how])


def _export(args) -> int:
    from .export import ExportError, export

    try:
        export(args.dest, wheel=args.wheel, slugs=args.episode)
    except (ExportError, OSError) as exc:
        print(f"specdec-playable export: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _simulate(args, parser) -> int:
    import numpy as np

    from ..sim import montecarlo, theory

    if args.seed is not None and args.seed < 0:
        parser.error(f"argument --seed: must be a non-negative integer; got {args.seed}")
    try:
        result = montecarlo.simulate(args.q, args.k, args.c, args.rounds,
                                     rng=np.random.default_rng(args.seed))
    except ValueError as exc:
        parser.error(str(exc))
    out = dict(
        q=result.q, k=result.k, c=result.c, rounds=result.n_rounds, seed=args.seed,
        speedup=result.speedup, ci_low=result.ci_low, ci_high=result.ci_high,
        theory_speedup=theory.expected_speedup(result.q, result.k, result.c),
        mean_accepted=result.mean_accepted, tokens_per_round=result.tokens_per_round,
    )
    if args.json:
        print(json.dumps(out))
    else:
        print(f"q={result.q:g}  k={result.k}  c={result.c:g}  rounds={result.n_rounds:,}"
              f"  seed={args.seed if args.seed is not None else 'fresh'}")
        print(f"measured speedup : {out['speedup']:.3f}x  "
              f"(95% CI {out['ci_low']:.3f} to {out['ci_high']:.3f})")
        print(f"theory speedup   : {out['theory_speedup']:.3f}x  "
              "(Leviathan et al. 2023: (1-q^(k+1)) / ((1-q)(1+kc)))")
        print(f"tokens per round : {out['tokens_per_round']:.3f} measured "
              f"(mean accepted drafts {out['mean_accepted']:.3f}), cost per round "
              f"{result.cost_per_round:.3f} big passes")
    return 0


#: How the text marks what the draft got right: accepted drafts, the target's corrections, bonuses.
MARK_OPEN = {"accepted": "\u27e6", "correction": "\u27e8", "bonus": "\u27e8+"}
MARK_CLOSE = {"accepted": "\u27e7", "correction": "\u27e9", "bonus": "\u27e9"}


def marked_text(texts, marks) -> str:
    """The output with runs of accepted drafts in \u27e6...\u27e7 and corrections/bonuses in \u27e8...\u27e9."""
    out, cur = [], None
    for text, mark in zip(texts, marks):
        run = mark if mark in MARK_OPEN else None
        if run != cur or run in ("correction", "bonus"):
            if cur is not None:
                out.append(MARK_CLOSE[cur])
            if run is not None:
                out.append(MARK_OPEN[run])
            cur = run
        out.append(text)
    if cur is not None:
        out.append(MARK_CLOSE[cur])
    return "".join(out)


def _generate(args) -> int:
    from ..lm import ModelNotInstalled, get_model
    from ..lm.compare import BOOTSTRAP_SEED  # the same run gives the same interval
    from ..lm.head import HeadNotInstalled
    from ..lm.race import fair_speedup, race
    from ..lm.registry import make_draft

    try:
        model = get_model(args.weights)
    except ModelNotInstalled as exc:
        print(f"specdec-playable generate: error: the model is not installed; run: {exc.command}",
              file=sys.stderr)
        return 1
    tok = model.tokenizer
    ids = tok.chat(args.prompt)
    if len(ids) > 4096:
        print(f"specdec-playable generate: error: --prompt is {len(ids)} tokens; at most 4096",
              file=sys.stderr)
        return 2
    temperature = 0.0 if args.temperature is None else args.temperature
    kw = dict(max_new=args.max_new, temperature=temperature, top_p=args.top_p)
    draft = make_draft(args.draft)
    try:
        draft.begin(model)  # a draft with weights of its own loads them now (the head)
    except HeadNotInstalled as exc:
        print(f"specdec-playable generate: error: {exc}", file=sys.stderr)
        return 1
    r = race(model, ids, draft, args.k, rng=args.seed, **kw)
    plain, spec = r.plain, r.spec
    fair = fair_speedup(r.turns, rng=BOOTSTRAP_SEED, ended=spec.stopped == "eos")
    out = _generation_record(args, temperature, plain, spec, fair)
    if args.json:
        print(json.dumps(out))
    else:
        _print_generation(tok, plain, spec, fair, args=args, out=out)
    return 0


def _generation_record(args, temperature: float, plain, spec, fair) -> dict:
    """What ``generate --json`` prints: the settings, both runs, and the race's figures."""
    import math

    from ..lm.decode import draft_cost

    matched = spec.tokens == plain.tokens
    gain = fair.speedup
    c = draft_cost(plain, spec) if spec.proposed else 0.0

    def num(x):
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else x

    out = dict(
        prompt=args.prompt, draft=args.draft, k=args.k, max_new=args.max_new, weights=args.weights,
        mode="greedy" if temperature == 0 else "sampling", temperature=temperature,
        top_p=args.top_p, seed=args.seed, text=spec.text, tokens=list(spec.tokens),
        marks=list(spec.marks), plain_text=plain.text, matched_plain=matched,
        acceptance_rate=num(spec.acceptance_rate),
        accept_at=[num(float(a)) for a in spec.accept_at], tokens_per_pass=spec.tokens_per_pass,
        proposed=spec.proposed, accepted=spec.accepted, passes=spec.passes,
        plain_passes=plain.passes, prefill_ms=spec.prefill_ms, plain_wall_ms=plain.wall_ms,
        spec_wall_ms=spec.wall_ms, plain_tokens_per_s=num(_per_s(fair.plain_tokens_per_s, plain)),
        spec_tokens_per_s=num(_per_s(fair.spec_tokens_per_s, spec)), speedup=num(gain), draft_cost_c=c,
        stopped=spec.stopped, speedup_low=num(fair.low), speedup_high=num(fair.high),
        interval_level=fair.level, n_resamples=fair.n_resamples, rounds=fair.n_rounds,
        verdict=fair.verdict, work_speedup=num(fair.work_speedup),
        round_cost=num(fair.round_cost),
    )
    return out


def _per_s(race_figure: float, run) -> float:
    """A run's tokens per second: the race's (whose ratio is the speedup) where it has rounds,
    else the run's own decoding clock."""
    import math

    return race_figure if math.isfinite(race_figure) else run.tokens_per_second


def _print_generation(tok, plain, spec, fair, *, args, out: dict) -> None:
    """The human-readable report of ``generate``: the marked text, the two runs, the race's
    speedup with its interval and the work-based figure."""
    import math

    texts = [tok.token_text(t) for t in spec.tokens]
    print(marked_text(texts, spec.marks))
    print()
    print("marks: \u27e6accepted draft\u27e7  \u27e8target's correction\u27e9  \u27e8+bonus token\u27e9  "
          "(unmarked: written by a plain pass)")
    rate = "n/a (nothing drafted)" if out["acceptance_rate"] is None else f"{spec.acceptance_rate:.0%}"
    print(f"draft {args.draft}, k={args.k}: acceptance {rate} "
          f"({spec.accepted} of {spec.accepted + spec.rejected} judged, {spec.proposed} proposed), "
          f"{spec.tokens_per_pass:.2f} tokens per pass, draft cost c={out['draft_cost_c']:.3f}")
    print("the two runs took turns, pass by pass; each clock counts only its own passes, in CPU "
          "time (a wait for a core is not counted)")
    plain_tps, spec_tps = _per_s(fair.plain_tokens_per_s, plain), _per_s(fair.spec_tokens_per_s, spec)
    print(f"plain       : {len(plain.tokens)} tokens in {plain.wall_ms / 1e3:.2f} s "
          f"({plain_tps:.1f} tokens/s after a {plain.prefill_ms / 1e3:.2f} s prompt pass; "
          f"{out['weights']} weights)")
    print(f"speculative : {len(spec.tokens)} tokens in {spec.wall_ms / 1e3:.2f} s "
          f"({spec_tps:.1f} tokens/s after a {spec.prefill_ms / 1e3:.2f} s prompt pass)")
    gain = float("nan") if out["speedup"] is None else out["speedup"]
    speeds = f"{spec_tps:.1f} against {plain_tps:.1f} tokens/s, {out['weights']} weights"
    if math.isfinite(fair.low):
        print(f"measured speedup: {gain:.2f}x ({speeds}), {fair.level:.0%} interval "
              f"{fair.low:.2f}x-{fair.high:.2f}x (bootstrap over {fair.n_rounds} rounds, "
              f"{fair.n_resamples} resamples): {fair.verdict}")
    else:
        print(f"measured speedup: {gain:.2f}x ({speeds}; {fair.verdict}: an interval needs two rounds)")
    if math.isfinite(fair.work_speedup):
        print(f"by the work: {fair.tokens_per_pass:.2f} tokens per round / {fair.round_cost:.2f} steps "
              f"per round (each size at its median) = {fair.work_speedup:.2f}x on an idle machine")
    if out["temperature"] == 0:
        print("output matches plain greedy decoding: " + ("yes" if out["matched_plain"] else "NO"))
    else:
        print("sampling: both runs follow the model's distribution; the draws differ, so the texts "
              + ("match" if out["matched_plain"] else "differ"))


def _serve(args) -> int:
    import logging

    from .site import serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    print(f"Serving Speculative Decoding, Playable at http://{args.address}:{args.port}/", flush=True)
    serve(port=args.port, address=args.address, allow_websocket_origin=args.allow_websocket_origin,
          weights=args.weights, show=args.show, use_xheaders=args.use_xheaders, model_at_start=not args.no_model_at_start,
          unused_session_lifetime_milliseconds=args.unused_session_lifetime,
          check_unused_sessions_milliseconds=args.check_unused_sessions)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["serve", *argv]
    args = parser.parse_args(argv)
    if args.command == "simulate":
        return _simulate(args, parser)
    if args.command == "export":
        return _export(args)
    if args.command == "generate":
        return _generate(args)
    if args.command == "calibrate":
        return _calibrate(args)
    try:
        return _serve(args)
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # e.g. the port is already in use
        print(f"specdec-playable serve: error: cannot listen on {args.address}:{args.port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
