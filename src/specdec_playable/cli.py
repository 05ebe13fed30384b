"""Command line: ``specdec-playable [serve|simulate] ...``."""

from __future__ import annotations

import argparse
import json
import sys

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

    s = sub.add_parser("serve", help="serve the index and every episode (default)")
    s.add_argument("--port", type=_port, default=5006, help="port to listen on (default 5006)")
    s.add_argument("--address", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--allow-websocket-origin", action="append", default=[], type=_origin,
                   metavar="HOST:PORT",
                   help="also accept pages served from this origin (repeatable), e.g. a course site")
    s.add_argument("--show", action="store_true", help="open the site in a browser")
    s.add_argument("--use-xheaders", action="store_true",
                   help="trust X-Forwarded-* headers (only behind a reverse proxy)")
    s.add_argument("--unused-session-lifetime", type=_int_in(100, 86_400_000), default=15000,
                   metavar="MS",
                   help="how long a closed page's session is kept before it is freed (default 15000)")
    s.add_argument("--check-unused-sessions", type=_int_in(100, 86_400_000), default=17000,
                   metavar="MS",
                   help="how often to look for sessions to free (default 17000)")

    m = sub.add_parser("simulate", help="Monte-Carlo speedup beside the closed-form theory")
    m.add_argument("--q", type=float, required=True, help="draft acceptance probability, in [0, 1]")
    m.add_argument("--k", type=int, required=True, help="tokens drafted per round, in [1, 64]")
    m.add_argument("--c", type=float, required=True,
                   help="draft step cost as a fraction of a big pass, in [0, 10]")
    m.add_argument("--rounds", type=int, default=2000, help="rounds to simulate (default 2000)")
    m.add_argument("--seed", type=int, default=None,
                   help="seed for a reproducible run (default: fresh randomness)")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    e = sub.add_parser("export", help="write a static Pyodide build of every episode plus an index")
    e.add_argument("dest", metavar="DIR", help="folder to write (created if missing)")
    e.add_argument("--episode", action="append", default=None, metavar="SLUG",
                   help="export only this episode (repeatable)")
    e.add_argument("--wheel", default=None,
                   help="a prebuilt specdec_playable wheel (default: build one from this checkout)")
    return parser


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

    from .core import montecarlo, theory

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


def _serve(args) -> int:
    import logging

    from .site import serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    print(f"Serving Speculative Decoding, Playable at http://{args.address}:{args.port}/", flush=True)
    serve(port=args.port, address=args.address, allow_websocket_origin=args.allow_websocket_origin,
          show=args.show, use_xheaders=args.use_xheaders,
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
