"""Stage 3, the head's training loop: JAX + optax (the ``train`` extra), seeded, checkpointed.

EAGLE-style: the head takes the model's final-normed feature f_t (fused with the residual streams
of lower blocks for a head fed several layers) and the embedding of token x_{t+1} and predicts
f_{t+1}, read out through the model's tied head over the N tokens of its vocabulary. Loss:
cross-entropy against the model's own next-token distribution (over those N tokens) plus
``reg_weight`` x smooth-L1 on the feature, each position weighted by the features' ``weight``
where they carry one (a looping reply weighted down). ``unroll`` N trains N drafting steps per
position (EAGLE-3's training-time test, Li et al. 2025): step s is fed the head's own predicted
features from step s - 1 and attends as drafting does (see :func:`ttt_attention`).

A checkpoint holds the weights, the optimizer's state, the step and the data position (the
batches are drawn from the seed and the step, so the step is where the data stands), and the
history; a run resumes from it to the same weights as a run never stopped.

JAX is imported inside the functions that need it, so importing this module needs only numpy.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..lm.head import MATRICES, MAX_BLOCKS, block_names, count_blocks
from .features import n_rows, take_rows
from .ship import sha256_file

#: The most a genre's rows may be drawn more often than the others' (``--genre-weights``).
MAX_GENRE_WEIGHT = 20.0


def init_params(d: int, d_ff: int, attention: bool, final_norm: np.ndarray, seed: int, *,
                n_layers: int = 0, n_blocks: int = 1) -> dict:
    """Seeded initial weights (float32 numpy): the layer of lm.head before training; with
    ``n_layers`` lower layers fed in, a fusion that starts as the last layer alone; with
    ``n_blocks`` > 1, the further blocks drawn after the first (whose weights stay those of a
    one-block head of the same seed)."""
    rng = np.random.default_rng([seed, 1])

    def mat(out, inp, scale=1.0):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp)).astype(np.float32)

    p = dict(fc=mat(d, 2 * d), wgu=mat(2 * d_ff, d), wdown=mat(d, d_ff, 0.1),
             out_norm=np.asarray(final_norm, np.float32).copy())
    if attention:
        p.update(wqkv=mat(3 * d, d), wo=mat(d, d, 0.1))
    if n_layers:
        p["fuse"] = identity_fuse(d, n_layers)
    for b in range(1, n_blocks):
        wqkv, wo, wgu, wdown = block_names(b)
        p.update({wgu: mat(2 * d_ff, d), wdown: mat(d, d_ff, 0.1)})
        if attention:
            p.update({wqkv: mat(3 * d, d), wo: mat(d, d, 0.1)})
    return p


def deepened(params: dict, n_blocks: int, attention: bool, seed: int) -> dict:
    """``params`` with blocks added up to ``n_blocks``: their inputs seeded like
    :func:`init_params`'s and their output projections zero, so each added block passes its input
    through unchanged, the deeper head computes exactly what it did, and the new blocks learn
    from the first step."""
    have = count_blocks(params)
    if n_blocks <= have:
        raise ValueError(f"n_blocks {n_blocks} does not deepen a head of {have} blocks")
    d, d_ff = params["fc"].shape[0], params["wgu"].shape[0] // 2
    rng = np.random.default_rng([seed, 5])
    out = dict(params)
    for b in range(have, n_blocks):
        wqkv, wo, wgu, wdown = block_names(b)
        out[wgu] = (rng.standard_normal((2 * d_ff, d)) / np.sqrt(d)).astype(np.float32)
        out[wdown] = np.zeros((d, d_ff), np.float32)
        if attention:
            out[wqkv] = (rng.standard_normal((3 * d, d)) / np.sqrt(d)).astype(np.float32)
            out[wo] = np.zeros((d, d), np.float32)
    return out


def identity_fuse(d: int, n_layers: int) -> np.ndarray:
    """The fusion ``[0, ..., 0, I]`` (d, d x (n_layers + 1)): the last layer's feature alone, so
    a head fed several layers starts as the head it continues."""
    fuse = np.zeros((d, d * (n_layers + 1)), np.float32)
    fuse[:, d * n_layers:] = np.eye(d, dtype=np.float32)
    return fuse


def _rms(x):
    import jax
    import jax.numpy as jnp

    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)


def _shift(x, n: int):
    """``x`` moved ``n`` positions later along axis 1 (zeros in front): out[:, j] = x[:, j - n]."""
    import jax.numpy as jnp

    if n == 0:
        return x
    return jnp.concatenate((jnp.zeros_like(x[:, :n]), x[:, :-n]), axis=1)


def ttt_attention(q, own, past, hd: int):
    """Attention of drafting step ``s = len(past)`` over what the head's cache holds when it drafts.

    Training index ``j`` of step ``s`` is the ``s + 1``-th guess of a draft that starts at index
    ``j - s``: its cache holds the real positions ``<= j - s`` (step 0's keys) and one position
    from each earlier drafting step ``r`` (at index ``j - s + r``), then its own. EAGLE-3's
    training-time test, as :meth:`specdec_playable.lm.head.HeadRun.propose` serves it.
    ``q``, keys and values are ``(B, T, H, hd)``, keys rotated; ``own`` is this step's (k, v).
    """
    import jax
    import jax.numpy as jnp

    s_ = len(past)
    t = q.shape[1]
    k0, v0 = (past[0] if past else own)
    scores = jnp.einsum("bqhe,bkhe->bhqk", q, k0) / np.sqrt(hd)
    allowed = jnp.tril(jnp.ones((t, t), bool), -s_)  # real keys at i <= j - s
    scores = jnp.where(allowed[None, None], scores, -jnp.inf)
    diag, vals = [], []
    for r in range(1, s_ + 1):
        kr, vr = past[r] if r < s_ else own
        kr, vr = _shift(kr, s_ - r), _shift(vr, s_ - r)
        d = jnp.einsum("bqhe,bqhe->bhq", q, kr) / np.sqrt(hd)
        ok = jnp.arange(t) >= s_ - r
        diag.append(jnp.where(ok[None, None], d, -jnp.inf)[..., None])
        vals.append(vr)
    p = jax.nn.softmax(jnp.concatenate([scores] + diag, axis=-1), axis=-1)
    o = jnp.einsum("bhqk,bkhe->bqhe", p[..., :t], v0)
    for r, vr in enumerate(vals):
        o = o + p[..., t + r].transpose(0, 2, 1)[..., None] * vr
    return o


def params_from_asset(path: Path, args) -> dict:
    """Float32 training weights from a shipped asset (:func:`export` undone), to train further.

    Raises ``SystemExit`` with a one-line reason when its shape is not the one ``args`` asks for.
    """
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    # The readout is the model's own embedding over the vocabulary, so a new vocabulary
    # (``--revocab``) keeps every trained weight.
    have_ff = arrays["wgu"].shape[0] // 2
    widen = getattr(args, "widen_ff", False) and args.d_ff > have_ff
    want = dict(n_heads=args.n_heads, window=args.chunk, d_ff=args.d_ff if widen else have_ff,
                n_vocab=args.n_vocab if getattr(args, "revocab", False) else arrays["vocab"].size)
    got = dict(n_heads=int(arrays["n_heads"][0]), window=int(arrays["window"][0]), d_ff=args.d_ff,
               n_vocab=args.n_vocab)
    n_blocks = getattr(args, "n_blocks", 1)
    if want != got or ("wqkv" in arrays) != (args.block == "attention") or count_blocks(arrays) > n_blocks:
        raise SystemExit(f"--init-from {path}: the asset's shape {dict(want, blocks=count_blocks(arrays))} "
                         f"is not this run's {dict(got, blocks=n_blocks)} (--block {args.block})")
    out = {k: arrays[k].astype(np.float32) for k in ("out_norm",) + MATRICES if k in arrays}
    have = tuple(int(m) for m in arrays.get("layers", ()))
    if have and have != tuple(args.layers):
        raise SystemExit(f"--init-from {path}: the asset reads blocks {have}, this run --layers "
                         f"{','.join(map(str, args.layers)) or '(none)'}")
    if args.layers and "fuse" not in out:  # a head of the last layer alone, now fed several
        out["fuse"] = identity_fuse(out["fc"].shape[0], len(args.layers))
    _fold_scale(out, args.n_heads, undo=True)
    if widen:
        out.update(widened_ff(out["wgu"], out["wdown"], args.d_ff, args.seed))
    if n_blocks > count_blocks(out):
        out = deepened(out, n_blocks, args.block == "attention", args.seed)
    return out


def _fold_scale(params: dict, n_heads: int, undo: bool = False) -> None:
    """Fold the queries' ``1/sqrt(head dim)`` into every block's ``wqkv`` (as the asset stores
    it), or with ``undo`` take it out again (as training keeps it), in place."""
    for b in range(count_blocks(params)):
        wqkv = block_names(b)[0]
        if wqkv in params:
            d = params[wqkv].shape[1]
            f = np.sqrt(d // n_heads)
            params[wqkv][:d] *= f if undo else 1.0 / f


def widened_ff(wgu: np.ndarray, wdown: np.ndarray, d_ff: int, seed: int) -> dict:
    """The feed-forward widened to ``d_ff`` units: the old units kept, the new ones' gate and
    up rows seeded like :func:`init_params`'s and their output columns zero, so the widened head
    computes exactly what it did and the new units learn from the first step."""
    old = wgu.shape[0] // 2
    if d_ff <= old:
        raise ValueError(f"d_ff {d_ff} does not widen a feed-forward of {old} units")
    d, n = wgu.shape[1], d_ff - old
    rng = np.random.default_rng([seed, 4])
    new = (rng.standard_normal((2, n, d)) / np.sqrt(d)).astype(np.float32)
    gate, up = wgu[:old], wgu[old:]
    return dict(wgu=np.concatenate((gate, new[0], up, new[1])),
                wdown=np.concatenate((wdown, np.zeros((wdown.shape[0], n), np.float32)), axis=1))


def update_scale(params: dict, old_ff: int, scale: float, old_blocks: int = 1) -> dict:
    """Per weight, the factor on its optimizer update: ``scale`` for the weights carried over
    from ``--init-from``, 1 for the units a widened feed-forward added (``old_ff`` units were
    there before) and for the blocks a deeper head added (after the ``old_blocks`` it had)."""
    added = {name for b in range(old_blocks, MAX_BLOCKS) for name in block_names(b)}
    out = {k: np.full(np.shape(v), 1.0 if k in added else scale, np.float32) for k, v in params.items()}
    d_ff = np.shape(params["wgu"])[0] // 2
    if d_ff > old_ff:
        out["wgu"][old_ff:d_ff] = out["wgu"][d_ff + old_ff:] = 1.0
        out["wdown"][:, old_ff:] = 1.0
    return out


def asset_blocks(args) -> int:
    """The blocks of the head ``--init-from`` continues (``--n-blocks`` without one)."""
    if not args.init_from:
        return getattr(args, "n_blocks", 1)
    with np.load(args.init_from) as z:
        return count_blocks(z.files)


def asset_ff(args) -> int:
    """The feed-forward units of the head ``--init-from`` continues (``--d-ff`` without one)."""
    if not args.init_from:
        return args.d_ff
    with np.load(args.init_from) as z:
        return z["wgu"].shape[0] // 2


def asset_vocab(path: Path) -> np.ndarray:
    with np.load(path) as z:
        return z["vocab"].astype(np.int64)


def jax_inputs(params, feats, low):
    """The head's inputs at real positions (lm.head.head_inputs): ``feats`` (B, T, d) themselves,
    or with a fusion, ``fuse [rms(low[..., i, :]) ..., feats]`` for ``low`` (B, T, L, d)."""
    import jax.numpy as jnp

    if "fuse" not in params:
        return feats
    z = jnp.concatenate([_rms(low[..., i, :]) for i in range(low.shape[-2])] + [feats], axis=-1)
    return z @ params["fuse"].T


def jax_head(params, feats, embeds, n_heads: int, past=()):
    """lm.head.head_forward in JAX over whole chunks (B, T, d), no cache.

    ``past``: per earlier drafting step, every block's keys and values (step 0 fed the target's
    real features; see :func:`ttt_attention`); empty for plain causal attention. Returns the
    predicted features and this step's keys and values, one (keys, values) per block.
    """
    import jax
    import jax.numpy as jnp

    x = jnp.concatenate((_rms(feats), _rms(embeds)), axis=-1) @ params["fc"].T
    kvs = []
    for b in range(count_blocks(params)):
        wqkv, wo, wgu, wdown = block_names(b)
        if wqkv in params:
            o, kv = _jax_attention(params[wqkv], _rms(x), n_heads, [step[b] for step in past])
            x = x + o @ params[wo].T
            kvs.append(kv)
        gate, up = jnp.split(_rms(x) @ params[wgu].T, 2, axis=-1)
        x = x + (jax.nn.silu(gate) * up) @ params[wdown].T
    return _rms(x) * params["out_norm"], kvs


def _jax_attention(wqkv, xn, n_heads: int, past: list):
    """One block's attention of the normed ``xn`` (B, T, d) as drafting attends
    (:func:`ttt_attention`, over ``past``: this block's keys and values of the earlier drafting
    steps); returns its output before the output projection and this step's (keys, values)."""
    import jax.numpy as jnp

    b, t, d = xn.shape
    hd = d // n_heads
    qkv = xn @ wqkv.T
    q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, t, n_heads, hd) for i in range(3))
    inv = 10000.0 ** (-jnp.arange(0, hd, 2, dtype=jnp.float32) / hd)
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]

    def rope(z):
        a, c = z[..., :hd // 2], z[..., hd // 2:]
        return jnp.concatenate((a * cos - c * sin, a * sin + c * cos), axis=-1)

    kv = (rope(k), v)
    return ttt_attention(rope(q), kv, past, hd).reshape(b, t, d), kv


def unrolled(params, feats, embeds, n_heads: int, steps: int, low=None) -> list:
    """The head's predicted features at each of ``steps`` drafting steps (training-time test).

    Step 0 reads the target's real features (fused with ``low``, the lower layers' residual
    streams, for a head fed several layers: :func:`jax_inputs`); step ``s`` at index ``j``
    reads the head's own prediction of step ``s - 1`` at ``j - 1`` (what drafting a further
    token feeds it) and attends as drafting does (:func:`ttt_attention`). Tokens are the real
    next tokens: a later guess only counts once the earlier ones matched them.
    """
    import jax.numpy as jnp

    real = jax_inputs(params, feats, low)
    inputs, past, preds = real, [], []
    for _ in range(steps):
        pred, kv = jax_head(params, inputs, embeds, n_heads, past)
        preds.append(pred)
        past.append(kv)
        inputs = jnp.concatenate((real[:, :1], pred[:, :-1]), axis=1)
    return preds


def loss_fn(params, batch, readout, cfg, scale=1.0):
    """Mean over drafting steps of the mean over valid positions of CE(model's p over the
    vocabulary, head's q) + w * smooth L1 on the feature, times ``scale`` (the batch's weight,
    :meth:`ByLength.scale`); per step, its loss (unscaled) and how often its guess is the model's
    greedy token."""
    import jax
    import jax.numpy as jnp

    feats, low, embeds, target, valid = batch
    tlog = target @ readout.T
    p = jax.nn.softmax(tlog, axis=-1)
    total, parts = 0.0, []
    preds = unrolled(params, feats, embeds, cfg["n_heads"], cfg["unroll"], low)
    for s_, pred in enumerate(preds):
        logq = jax.nn.log_softmax(pred @ readout.T, axis=-1)
        ce = -(p * logq).sum(-1)
        diff = jnp.abs(pred - target)
        reg = jnp.where(diff < 1.0, 0.5 * diff * diff, diff - 0.5).mean(-1)
        ok = valid * (jnp.arange(valid.shape[1]) >= s_)[None, :]  # a draft needs a real start
        n = jnp.maximum(ok.sum(), 1.0)
        step_loss = ((ce + cfg["reg_weight"] * reg) * ok).sum() / n
        acc = ((logq.argmax(-1) == tlog.argmax(-1)) * ok).sum() / n
        total = total + scale * step_loss / cfg["unroll"]
        parts.append((step_loss, acc))
    return total, parts


#: A batch is cut to its longest row rounded up to a multiple of this many positions: the padding
#: past it is never scored, and the few shapes that gives are each compiled once.
LENGTH_STEP = 64


def batch_width(lens: np.ndarray, width: int) -> int:
    """The positions a batch of rows of ``lens`` tokens keeps (of the rows' ``width``)."""
    return min(width, -(-int(np.max(lens)) // LENGTH_STEP) * LENGTH_STEP)


def make_batch(data: dict, idx: np.ndarray, embed: np.ndarray):
    """``(features, lower layers' streams or None, next tokens' embeddings, next features,
    valid)`` of the chunks ``idx``, cut to :func:`batch_width`; ``valid`` is each position's
    weight where the features carry one (``weight``), else 1 at every real position."""
    lens = np.asarray(data["lens"][idx])
    t = batch_width(lens, data["toks"].shape[1])
    toks, feats = data["toks"][idx, :t], data["feats"][idx, :t].astype(np.float32)
    low = data["low"][idx, :t - 1].astype(np.float32) if "low" in data else None
    valid = (np.arange(1, t)[None, :] < lens[:, None]).astype(np.float32)
    if "weight" in data:
        valid = valid * data["weight"][idx][:, 1:t].astype(np.float32)
    return (feats[:, :-1], low, embed[toks[:, 1:]], feats[:, 1:], valid)


def save_ckpt(path: Path, step: int, params, opt_state, history: list) -> None:
    """The weights, the optimizer's state and the data position (``step``: batches drawn so far;
    batch ``i`` is drawn from the seed and ``i``), written atomically, and the history beside."""
    import jax

    leaves = jax.tree_util.tree_leaves((params, opt_state))
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, *[np.asarray(x) for x in leaves], step=step, data_position=step)
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps(history))


def load_ckpt(path: Path, params, opt_state):
    import jax

    if not path.is_file():
        return 0, params, opt_state, []
    treedef = jax.tree_util.tree_structure((params, opt_state))
    with np.load(path) as z:
        n = len([k for k in z.files if k.startswith("arr_")])
        leaves = [z[f"arr_{i}"] for i in range(n)]
        step = int(z["step"])
    params, opt_state = jax.tree_util.tree_unflatten(treedef, leaves)
    print(f"resumed from {path} at step {step}")
    return step, params, opt_state, json.loads(path.with_suffix(".json").read_text())


def optimizer(args):
    """AdamW with warm-up and cosine decay, gradients clipped to norm 1."""
    import optax

    sched = optax.warmup_cosine_decay_schedule(0.0, args.lr, min(50, args.steps // 10 + 1),
                                               args.steps, args.lr * 0.05)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))


def start_params(model, args) -> dict:
    """The weights training starts from: a shipped head's (``--init-from``) or seeded ones."""
    import jax.numpy as jnp

    if args.init_from:
        start_from = params_from_asset(Path(args.init_from), args)
    else:
        start_from = init_params(model.config.d_model, args.d_ff, args.block == "attention",
                                 model.weights.final_norm, args.seed, n_layers=len(args.layers),
                                 n_blocks=getattr(args, "n_blocks", 1))
    return {k: jnp.asarray(v) for k, v in start_from.items()}


def held_out(held: dict, params, held_loss, embed: np.ndarray, batch: int, unroll: int) -> dict:
    """Loss and agreement of every drafting step on the held-out chunks (their means, weighted by
    valid positions): the unrolled test, not trained on."""
    total, loss, acc = 0.0, 0.0, np.zeros(unroll)
    n_held = n_rows(held)
    for s in range(0, n_held, batch):
        b = make_batch(held, np.arange(s, min(s + batch, n_held)), embed)
        n = float(b[-1].sum())
        value, parts = held_loss(params, b)
        total, loss = total + n, loss + n * float(value)
        acc += n * np.array([float(a) for _, a in parts])
    return dict(loss=round(loss / max(total, 1), 4),
                agreement=[round(float(a), 4) for a in acc / max(total, 1)])


def _print_step(rec: dict, args, start: int, t0: float) -> None:
    step = rec["step"]
    if step % args.print_every == 0 or step == args.steps:
        el = time.perf_counter() - t0
        eta = el / (step - start) * (args.steps - step)
        print(f"  step {step}/{args.steps} loss {rec['loss']:.3f} agreement per guess "
              f"{' / '.join(f'{a:.2f}' for a in rec['acc'])} ({el:.0f} s, ~{eta:.0f} s left)",
              flush=True)


def _held_and_snapshot(rec: dict, params, vocab, args, held) -> None:
    step = rec["step"]
    rec["held"] = held()
    if args.snapshots:  # the head as it would ship at this step, to measure later
        snap = Path(args.work) / f"head_{run_tag(args)}_step{step}.npz"
        np.savez(snap, **export(params, vocab, args))
        rec["snapshot"] = snap.name
    print(f"  held out at step {step}: loss {rec['held']['loss']:.3f}, agreement per "
          f"guess {' / '.join(f'{a:.3f}' for a in rec['held']['agreement'])}", flush=True)


def last_step(args) -> int:
    """Where this call stops: the run's end, or ``--stop-at`` (an interruption) if earlier."""
    stop = getattr(args, "stop_at", 0)
    return min(args.steps, stop) if stop else args.steps


def train(model, prep: dict, vocab: np.ndarray, args, evaluate=None) -> tuple[dict, list, float]:
    """AdamW on the loss above; a checkpoint every ``--ckpt-every`` steps, at the end and where
    ``--stop-at`` stops it early; a run resumes from its checkpoint."""
    embed = model.weights.embed
    params = start_params(model, args)
    opt = optimizer(args)
    ckpt = Path(args.work) / f"ckpt_{run_tag(args)}.npz"
    start, params, opt_state, history = load_ckpt(ckpt, params, opt.init(params))
    grad, update, held_loss = step_functions(params, embed[vocab], opt, args)
    data = subset(prep["train"], args.train_fraction, args.seed)
    end, t0 = last_step(args), time.perf_counter()
    rows_of = row_sampler(data, args)
    weight = getattr(rows_of, "scale", lambda step: 1.0)
    for step in range(start, end):
        batch = make_batch(data, rows_of(step), embed)
        (_, parts), g = grad(params, batch, np.float32(weight(step)))
        params, opt_state = update(params, opt_state, g)
        losses = [float(x) for x, _ in parts]  # unweighted: the mean is the loss as before
        rec = dict(step=step + 1, loss=round(float(np.mean(losses)), 4),
                   losses=[round(x, 4) for x in losses],
                   tokens_seen=(step + 1) * int(batch[-1].sum()),
                   acc=[round(float(a), 4) for _, a in parts])
        history.append(rec)
        _print_step(rec, args, start, t0)
        if evaluate is not None and (step + 1) in evaluate[0]:
            rec["eval"] = evaluate[1](export(params, vocab, args))
        if (step + 1) in args.held_at or step + 1 == args.steps:
            _held_and_snapshot(rec, params, vocab, args, lambda: held_out(
                prep["held"], params, held_loss, embed, args.batch, args.unroll))
        if (step + 1) % args.ckpt_every == 0 or step + 1 == end:
            save_ckpt(ckpt, step + 1, params, opt_state, history)
    return {k: np.asarray(v) for k, v in params.items()}, history, time.perf_counter() - t0


def step_functions(params, readout: np.ndarray, opt, args) -> tuple:
    """The jitted ``(grad, update, held_loss)`` a training step runs: the loss and its gradient
    on a batch and its weight (a float32 scalar), AdamW's update (each weight's scaled by
    ``--old-lr-scale`` where it is not 1), and the loss alone for the held-out rows."""
    import jax
    import jax.numpy as jnp
    import optax

    cfg = dict(unroll=args.unroll, n_heads=args.n_heads, reg_weight=args.reg_weight)
    readout = jnp.asarray(readout)
    grad = jax.jit(jax.value_and_grad(lambda p, b, sc: loss_fn(p, b, readout, cfg, sc), has_aux=True))
    held_loss = jax.jit(lambda p, b: loss_fn(p, b, readout, cfg))
    scale = getattr(args, "old_lr_scale", 1.0)
    masks = (jax.tree_util.tree_map(jnp.asarray, update_scale(params, asset_ff(args), scale,
                                                                asset_blocks(args)))
             if scale != 1.0 else None)

    @jax.jit
    def update(params, opt_state, g):
        upd, opt_state = opt.update(g, opt_state, params)
        if masks is not None:
            upd = jax.tree_util.tree_map(lambda u, m: u * m, upd, masks)
        return optax.apply_updates(params, upd), opt_state

    return grad, update, held_loss


def batch_rows(n: int, batch: int, step: int, seed: int, p=None, sampler: str = "random") -> np.ndarray:
    """The rows of batch ``step`` (of ``n``), from the seed and the step alone, so a resumed run
    draws what a run never stopped draws.

    ``"random"``: ``batch`` distinct rows drawn with chances ``p`` (None: alike), afresh each step,
    so over many steps some rows come again before others come once. ``"epoch"``: the rows in a
    seeded order per epoch, ``batch`` at a time, every row once an epoch (a batch that spans two
    epochs ends one and starts the next); every row alike, so ``p`` must be None (a share of
    documents in epochs: :func:`mixed_epoch_rows`).
    """
    b = min(batch, n)
    if sampler == "random":
        return np.random.default_rng([seed, 2, step]).choice(n, b, replace=False, p=p)
    if sampler != "epoch" or p is not None:
        raise ValueError(f"sampler must be 'random' or 'epoch' (every row alike); got {sampler!r}"
                         + (" with row chances" if p is not None else ""))
    return _epoch_take(n, step * b, b, seed, _REPLY_STREAM)


#: The seeds' tags of the epoch orders: every row's (or the replies' alone), and the documents'.
_REPLY_STREAM, _DOC_STREAM = 6, 7


def _epoch_take(n: int, start: int, count: int, seed: int, stream: int) -> np.ndarray:
    """Draws ``start`` to ``start + count`` of the endless sequence of epochs of ``n`` rows,
    each epoch a seeded order of every row (epoch ``e``'s order from ``[seed, stream, e]``)."""
    rows: list[int] = []
    while len(rows) < count:
        epoch, at = divmod(start + len(rows), n)
        order = np.random.default_rng([seed, stream, epoch]).permutation(n)
        rows.extend(order[at:at + count - len(rows)].tolist())
    return np.array(rows, np.int64)


def mixed_epoch_rows(is_doc: np.ndarray, doc_share: float, batch: int, step: int, seed: int) -> np.ndarray:
    """The rows of batch ``step`` for ``--sampler epoch`` with ``--doc-share``: the documents'
    chunks (``is_doc``) and the replies each in epochs of their own (every row of a group once
    before any comes again), batch ``step`` taking ``floor((step + 1) b s) - floor(step b s)``
    documents (``b`` rows a batch, ``s`` the share) and the replies the rest, so after any number
    of steps the documents are ``s`` of the rows drawn to within one row. A group smaller than its
    part of one batch repeats rows within it."""
    is_doc = np.asarray(is_doc, bool)
    if not 0.0 < doc_share < 1.0:
        raise ValueError(f"doc_share must lie in (0, 1); got {doc_share}")
    docs, replies = np.flatnonzero(is_doc), np.flatnonzero(~is_doc)
    if not docs.size or not replies.size:
        raise ValueError("the documents' share needs rows of both kinds")
    b = min(batch, is_doc.size)
    before, upto = (int(np.floor(i * b * doc_share + 1e-9)) for i in (step, step + 1))
    return np.concatenate((docs[_epoch_take(docs.size, before, upto - before, seed, _DOC_STREAM)],
                           replies[_epoch_take(replies.size, step * b - before, b - upto + before,
                                               seed, _REPLY_STREAM)]))


def _draw(data: dict, args):
    """:func:`row_sampler` before any sorting by length."""
    share, sampler = getattr(args, "doc_share", 0.0), getattr(args, "sampler", "random")
    weights = getattr(args, "genre_weights", None)
    if sampler == "epoch" and share and not weights and "genre" in data:
        is_doc = np.asarray(data["genre"]) != "selfdistill"
        if 0 < is_doc.sum() < is_doc.size:
            return lambda step: mixed_epoch_rows(is_doc, share, args.batch, step, args.seed)
    n, p = n_rows(data), row_chances(data, share, weights)
    return lambda step: batch_rows(n, args.batch, step, args.seed, p, sampler)


def row_sampler(data: dict, args):
    """The function from a step to its batch's rows, from the seed and the step alone (a resumed
    run draws what a run never stopped draws): :func:`mixed_epoch_rows` for ``--sampler epoch``
    with ``--doc-share`` over rows of both kinds, else :func:`batch_rows` with
    :func:`row_chances`; with ``--sort-window W`` > 1, :class:`ByLength` over it."""
    draw = _draw(data, args)
    window = getattr(args, "sort_window", 1)
    return ByLength(draw, np.asarray(data["lens"]), window) if window > 1 else draw


class ByLength:
    """``draw`` with each run of ``window`` steps' rows (steps ``w W`` to ``w W + W - 1``) sorted
    by length and dealt out again in order, the shortest to the run's first step: the same rows
    over every run of ``window`` steps, each batch of rows of like length, so :func:`make_batch`
    cuts less padding. Calling it gives a step's rows; :meth:`scale` its loss's weight."""

    def __init__(self, draw, lens: np.ndarray, window: int) -> None:
        self.draw, self.lens, self.window = draw, np.asarray(lens), window
        self._run: tuple[int, np.ndarray, list[int]] | None = None

    def _sorted(self, first: int) -> tuple[np.ndarray, list[int]]:
        if self._run is None or self._run[0] != first:
            drawn = [self.draw(first * self.window + i) for i in range(self.window)]
            pooled = np.concatenate(drawn)
            self._run = (first, pooled[np.argsort(self.lens[pooled], kind="stable")],
                         [d.size for d in drawn])
        return self._run[1], self._run[2]

    def __call__(self, step: int) -> np.ndarray:
        first, at = divmod(step, self.window)
        pooled, sizes = self._sorted(first)
        start = sum(sizes[:at])
        return pooled[start:start + sizes[at]]

    def scale(self, step: int) -> float:
        """The weight of batch ``step``'s loss: its share of its run's scored positions, times
        ``window``. A batch's loss is a mean over its positions, so without it a batch of short
        rows would count each of its tokens more than a batch of long rows does; with it every
        position of a run counts alike, as in unsorted batches on average."""
        first, at = divmod(step, self.window)
        pooled, sizes = self._sorted(first)
        ends = np.cumsum([0, *sizes])
        scored = [float(np.sum(self.lens[pooled[a:b]] - 1)) for a, b in zip(ends[:-1], ends[1:])]
        return self.window * scored[at] / max(sum(scored), 1.0)


def row_chances(data: dict, doc_share: float, genre_weights: dict | None = None) -> np.ndarray | None:
    """Each training row's chance of being drawn: None (every row alike) when ``doc_share`` is 0,
    no genre is weighted, or the rows are all of one kind. Else the documents' chunks (every genre
    but the self-distillation replies) share ``doc_share`` of it and the replies the rest (with
    ``doc_share`` 0, all rows share it), and within a group a row of a genre named in
    ``genre_weights`` is drawn that many times as often as a row of an unnamed one."""
    weights = genre_weights or {}
    if (not doc_share and not weights) or "genre" not in data:
        return None
    if doc_share and not 0.0 < doc_share < 1.0:
        raise ValueError(f"doc_share must lie in (0, 1); got {doc_share}")
    check_genre_weights(weights)
    genre = np.asarray(data["genre"])
    w = np.ones(genre.size)
    for g, x in weights.items():
        w[genre == g] = x
    reply = genre == "selfdistill"
    n_reply = int(reply.sum())
    if not doc_share or n_reply in (0, reply.size):
        return w / w.sum() if weights else None
    return np.where(reply, (1.0 - doc_share) * w / w[reply].sum(), doc_share * w / w[~reply].sum())


def check_genre_weights(weights: dict) -> None:
    """Refuse a genre weight outside (0, ``MAX_GENRE_WEIGHT``] or one on the self-distillation
    replies (their share is ``doc_share``'s)."""
    for g, x in weights.items():
        if not 0.0 < x <= MAX_GENRE_WEIGHT or g == "selfdistill":
            raise ValueError(f"a genre weight lies in (0, {MAX_GENRE_WEIGHT:g}] and names a "
                             f"document genre; got {g}={x}")


def subset(data: dict, fraction: float, seed: int) -> dict:
    """A seeded share of the training chunks (all of them at 1): the data-budget experiments.
    Shard columns stay on disk (a view of the rows kept)."""
    n = n_rows(data)
    if fraction >= 1.0:
        return data
    keep = np.sort(np.random.default_rng([seed, 3]).permutation(n)[:max(1, int(n * fraction))])
    return take_rows(data, keep)


def run_tag(args) -> str:
    return (f"{args.seed}_{args.data_scale}_{args.train_fraction}_{args.block}_{args.d_ff}_"
            f"{args.n_vocab}_{args.unroll}_{args.steps}_{args.batch}_{args.lr}_{args.reg_weight}"
            + (f"_l{'-'.join(map(str, args.layers))}" if args.layers else "")
            + (f"_from{sha256_file(Path(args.init_from))[:10]}" if args.init_from else "")
            + ("_revocab" if getattr(args, "revocab", False) else "")
            + ("_widen" if getattr(args, "widen_ff", False) else "")
            + (f"_b{args.n_blocks}" if getattr(args, "n_blocks", 1) != 1 else "")
            + ("_epoch" if getattr(args, "sampler", "random") == "epoch" else "")
            + (f"_sort{args.sort_window}" if getattr(args, "sort_window", 1) > 1 else "")
            + (f"_old{args.old_lr_scale}" if getattr(args, "old_lr_scale", 1.0) != 1.0 else "")
            + (f"_docs{args.doc_share}" if getattr(args, "doc_share", 0.0) else "")
            + "".join(f"_{g}{x:g}" for g, x in sorted((getattr(args, "genre_weights", None)
                                                        or {}).items()))
            + (f"_sd{args.sd_rows}-{args.sd_held_share}-{args.sd_loops}"
               + (f"{args.sd_loop_weight}" if args.sd_loops == "weight" else "")
               if getattr(args, "selfdistill", "") else ""))


def export(params, vocab: np.ndarray, args) -> dict:
    """The asset's arrays: float16 weights (1/sqrt(head dim) folded into the query rows)."""
    out = {k: np.asarray(v, np.float32).copy() for k, v in params.items()}
    _fold_scale(out, args.n_heads)
    out = {k: v.astype(np.float16) for k, v in out.items()}
    if args.layers:
        out["layers"] = np.array(args.layers, np.int32)
    out.update(vocab=vocab.astype(np.int32), n_heads=np.array([args.n_heads], np.int32),
               window=np.array([args.chunk], np.int32), rope_base=np.array([10000.0]),
               eps=np.array([1e-5]))
    return out


