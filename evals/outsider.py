"""How three copies of one policy treat the odd seat out: do they gang up on it?

    python -m evals.outsider --policy SPEC [--policy ...] --opponents SPEC --games N --seed S
                             [--out FILE.json]

The head to head of the report seats one policy against three copies of another.
Copies of one network decide alike on the same public record, so if that network
learned to spare players that behave like itself, the copies act as a team against the
fourth seat, and the head to head measures that more than play.  For each ``--policy``
in one seat (uniform) of ``--games`` tables whose other seats all play ``--opponents``
(common random numbers: every policy gets the same tables and keys), this counts:

* ``wins``: the outsider's win rate (one seat of four: 0.25 is a fair share);
* ``placement``: the share of games where the outsider went out first, second, third
  (``out_1st`` ... ; ``won`` is the rest);
* ``targeted_at_outsider``: in the phase with three seats left, the outsider among
  them, the share of the copies' targeted main actions (coup, assassinate, steal) aimed
  at the outsider rather than at the other copy; 0.5 is no preference, and a share near
  1 is a gang-up (``targeted_actions`` is how many there were);
* ``bluff_rate`` and ``challenge_rate`` of the outsider and of the copies (``outsider``,
  ``copies``): bluffs per main-action decision with a legal bluff (a claim of a role the
  hand lacks), challenges per decision where a challenge is legal, counted by the arena's
  tally (`coupjax.seat_tables.count_stats`).  Seated as the outsider, a best
  response's rates say how it beats the copies (bluffing copies that never challenge).

It plays with `coupjax.rollout.play` and a tally, as `evals.reaction_rates` does.
"""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
from rich.table import Table

from coupjax import console, rollout
from coupjax.args import Parser, fail, output_file, positive_int
from coupjax.env import Env
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.policies import PolicySpecError, resolve_policy
from coupjax.policies.spec import describe_spec
from coupjax.seat_tables import INIT_STREAM, bucket_size, count_stats, game_keys, new_stats, pad_rows
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed

PROG = "python -m evals.outsider"
OUTSIDER, COPY = 0, 1  # policy indices of the runner


def outsider_tally(num_players: int):
    """A `coupjax.rollout.play` tally of (int32[B, 2], `coupjax.seat_tables.count_stats`'
    per game and seat stats): the copies' targeted main actions at the outsider and at the
    other copy, while exactly three seats (the outsider one of them) are left, and each
    seat's decisions, bluffs and challenges with their chances, as the arena counts them."""
    T = tables(num_players)
    offset, is_main = jnp.asarray(T.target_offset), jnp.asarray(T.is_main)
    seat_stats = count_stats(T, num_players)

    def tally(carry, tables_before, moved):
        counts, stats = carry
        s, a = tables_before.state, moved.action
        rows = jnp.arange(a.shape[0])
        outsider = jnp.argmax(tables_before.seats == OUTSIDER, axis=1)
        alive = jax.vmap(board.alive)(s)
        by_copy = tables_before.seats[rows, s.current_player] == COPY
        aimed = moved.served & is_main[a] & (offset[a] >= 0) & by_copy
        aimed = aimed & (alive.sum(-1) == 3) & alive[rows, outsider]
        at_outsider = (s.current_player + offset[a]) % num_players == outsider
        add = jnp.stack([aimed & at_outsider, aimed & ~at_outsider], axis=-1)
        return counts + add.astype(jnp.int32), seat_stats(stats, tables_before, moved)

    return tally


RATE_STATS = ("bluff_opportunities", "bluffs", "challenge_opportunities", "challenges")


def side_stats(stats: dict, seats) -> tuple[dict, dict]:
    """`RATE_STATS` summed over the outsider's seat and over the copies' (``seats`` [B, n])."""
    outsider = np.asarray(seats) == OUTSIDER
    return ({k: int(np.asarray(stats[k])[outsider].sum()) for k in RATE_STATS},
            {k: int(np.asarray(stats[k])[~outsider].sum()) for k in RATE_STATS})


def _rates(c: dict) -> dict:
    """bluff and challenge rates from a side's `RATE_STATS`."""
    return {"bluff_rate": c["bluffs"] / c["bluff_opportunities"] if c["bluff_opportunities"] else None,
            "bluff_opportunities": c["bluff_opportunities"],
            "challenge_rate": c["challenges"] / c["challenge_opportunities"] if c["challenge_opportunities"] else None,
            "challenge_opportunities": c["challenge_opportunities"]}


def outsider_seats(seed: int, n: int, games: int):
    """(the outsider's seat int32[G], the runner's policy per seat int32[G, n]) of ``games``
    tables of ``seed``: the outsider in a seat drawn per table, the copies elsewhere."""
    outsider_seat = np.random.default_rng([int(seed), n, 2]).integers(0, n, games)
    seats = np.full((games, n), COPY, np.int32)
    seats[np.arange(games), outsider_seat] = OUTSIDER
    return outsider_seat, seats


def outsider_runner(env, spec: str, opponents: str, tally, start, finish):
    """A jitted ``run(keys [B], seats [B, n]) -> finish(final tables, aux)``: the tables of
    ``keys`` (`coupjax.seat_tables.game_keys`) played by ``spec`` (policy `OUTSIDER`) and
    ``opponents`` (`COPY`) at ``seats`` (`outsider_seats`), each step folded into
    ``aux = start(B)`` by ``tally`` (`coupjax.rollout.play`'s); one runner for this
    module's figures and for any other count over the same tables."""
    players = rollout.Players(env, (resolve_policy(spec, env), resolve_policy(opponents, env)))

    @jax.jit
    def run(keys, seats):
        state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
        final, aux = rollout.play(players, state, keys, seats, tally=tally, aux=start(keys.shape[0]))
        return finish(final, aux)

    return run


def outsider_games(env, spec: str, opponents: str, games: int, seed: int, chunk: int = 1000) -> dict:
    """The module doc's figures for ``spec`` in one seat against three ``opponents``."""
    n = env.num_players
    run = outsider_runner(env, spec, opponents, outsider_tally(n),
                          start=lambda B: (jnp.zeros((B, 2), jnp.int32), new_stats(B, n)),
                          finish=lambda final, aux: (*aux, jax.vmap(board.placements)(final.state),
                                                     final.state.terminated))
    outsider_seat, seats = outsider_seats(seed, n, games)
    keys = np.asarray(game_keys(seed, 0, games))
    size = bucket_size(min(chunk, games))
    counts, rank = np.zeros(2, np.int64), []  # rank: the outsider's place, 0 the winner
    sides = [dict.fromkeys(RATE_STATS, 0), dict.fromkeys(RATE_STATS, 0)]  # the outsider's, the copies'
    for start in range(0, games, size):
        at = slice(start, min(start + size, games))
        real = at.stop - at.start
        c, stats, placements, done = jax.device_get(run(jnp.asarray(pad_rows(keys[at], size)),
                                                    jnp.asarray(pad_rows(seats[at], size))))
        if not np.asarray(done)[:real].all():
            raise RuntimeError("a game did not finish within the arena's step bound")
        counts += np.asarray(c)[:real].sum(axis=0)
        for side, add in zip(sides, side_stats({k: v[:real] for k, v in stats.items()}, seats[at])):
            for k in RATE_STATS:
                side[k] += add[k]
        rank.append(np.argmax(np.asarray(placements)[:real] == outsider_seat[at, None], axis=1))
    rank = np.concatenate(rank)
    aimed = int(counts.sum())
    return {"wins": float((rank == 0).mean()),
            "placement": {**{f"out_{k + 1}{('st', 'nd', 'rd')[k] if k < 3 else 'th'}": float((rank == n - 1 - k).mean())
                             for k in range(n - 1)}, "won": float((rank == 0).mean())},
            "targeted_at_outsider": float(counts[0] / aimed) if aimed else None, "targeted_actions": aimed,
            "outsider": _rates(sides[0]), "copies": _rates(sides[1]),
            "games": games, "seed": seed, "opponents": opponents}


def _pair(rates: dict) -> str:
    return " / ".join("-" if rates[k] is None else f"{rates[k]:.2f}" for k in ("bluff_rate", "challenge_rate"))


def render(out: dict, title: str) -> Table:
    table = Table(title=title)
    for col in ("policy", "wins", "out 1st / 2nd / 3rd", "copies aim at it (3 left)", "bluffs / challenges",
                "copies' bluffs / challenges"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for spec, r in out.items():
        place = " / ".join(f"{v:.2f}" for k, v in r["placement"].items() if k != "won")
        aim = "-" if r["targeted_at_outsider"] is None else f"{r['targeted_at_outsider']:.2f} of {r['targeted_actions']:,}"
        table.add_row(spec, f"{r['wins']:.3f}", place, aim, _pair(r["outsider"]), _pair(r["copies"]))
    return table


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", required=True, help="the outsider's policy spec (repeatable)")
    ap.add_argument("--opponents", required=True, help="policy spec of the three other seats")
    ap.add_argument("--games", type=positive_int, required=True, help="tables per policy")
    ap.add_argument("--seed", type=int, default=REPORT_SEED, help="table seed (tuning seeds are refused)")
    ap.add_argument("--players", type=int, default=4, choices=range(3, 7), metavar="{3..6}")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    try:
        for spec in [*args.policy, args.opponents]:
            describe_spec(spec)
    except PolicySpecError as err:
        fail(PROG, err)
    try:
        args.seed = check_report_seed(args.seed, PROG)
    except SeedError as err:
        fail(PROG, err)
    env = Env(args.players)
    out = {spec: outsider_games(env, spec, args.opponents, args.games, args.seed) for spec in dict.fromkeys(args.policy)}
    console.console().print(render(out, f"one seat against {args.players - 1} copies of {args.opponents}: "
                                        f"{args.games:,} tables of seed {args.seed}"))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
