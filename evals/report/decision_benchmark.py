"""The scenario benchmark: fixed decisions from explicit deals and event histories.

Each scenario is data: an explicit deal (hands, revealed cards, coins, the seat to
act, the turn; the deck is the remaining cards unless an exchange needs its order) and
the moves played from it (`coupjax.match.Match.play`), which lead to ONE decision of
``Match.current_player``, with the plays a sound player makes there and why.  A
scenario whose decision is a challenge decision also says what the challenge advisor
should recommend (``advisor``: True = challenge, False = pass).  The sound answers are
chosen to be clear-cut (impossible or disproven claims, unblockable kills, true blocks,
last-card risk), not matters of taste.

Scoring (`score_policy`, `score_advisor`): a policy scores the probability its
distribution puts on the sound plays (``mass``) and whether its most likely play is
one (``hit``); an advisor scores whether its recommendation is the sound one.
"""
from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.advice.challenge import AdvisorParams, advise_challenge
from coupjax.advice.recommend import advice_params
from coupjax.args import Parser, fail, output_file, positive_int
from coupjax.env import Env
from coupjax.inference import load_policy
from coupjax.match import Match
from coupjax.policies import PolicySpecError, resolve_policy
from coupjax.policies.spec import describe_spec
from coupjax.search import selfplay_search
from training.config import ConfigError, SelfPlayConfig, config_file, load_config
from training.search_targets import teacher

PROG = "python -m evals.report.decision_benchmark"

ROLES = rules.ROLES


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # action | react | answer_block | lose | exchange
    reason: str
    hands: tuple  # per seat, hidden cards
    moves: tuple = ()
    revealed: tuple | None = None
    coins: tuple | None = None
    current_player: int = 0
    turn: int = 0
    deck: tuple | None = None  # the deck's top cards (the rest follow); None: the rest, shuffled by the seed
    sound: tuple = ()  # protocol names; "reveal:<role>" / "keep:..." are resolved on the hand
    advisor: bool | None = None
    num_players: int = 4

    def build(self) -> Match:
        hands = [list(h) for h in self.hands]
        revealed = None if self.revealed is None else [list(r) for r in self.revealed]
        deck = None
        if self.deck is not None:  # the given cards on top, then the rest in role order
            held = [c for h in hands + (revealed or []) for c in h] + list(self.deck)
            deck = list(self.deck) + [r for r in ROLES for _ in range(rules.COPIES_PER_ROLE - held.count(r))]
        m = Match(num_players=self.num_players, seed=11, hands=hands, revealed=revealed,
                  coins=None if self.coins is None else list(self.coins), current_player=self.current_player,
                  turn=self.turn, deck=deck)
        for move in self.moves:
            m.play(move)
        return m

    def sound_names(self, m: Match) -> list[str]:
        """The sound plays as legal protocol names (``reveal:<role>`` -> the hand index)."""
        out = []
        for s in self.sound:
            if s.startswith("reveal:") and s.split(":")[1] in ROLES:
                hand = m.hands[m.current_player]
                out += [f"reveal:{i}" for i, c in enumerate(hand) if c == s.split(":")[1]]
            else:
                out.append(s)
        return out


def _four(a, b, c, d):
    return (tuple(a), tuple(b), tuple(c), tuple(d))


S = Scenario
_NONE = ([], [], [], [])
SCENARIOS: tuple[Scenario, ...] = (
    # ------------------------------------------------------------ main actions
    S("early_tax_with_duke", "action", "Holding a duke, tax is +3 coins that no challenge can stop and no one can "
      "block: the best opening.", _four(["duke", "captain"], ["assassin", "contessa"], ["ambassador", "captain"],
                                        ["contessa", "assassin"]), sound=("tax",)),
    S("forced_coup_at_the_threat", "action", "Ten coins force a coup; aim it at seat 2, one card from elimination and "
      "with 8 coins a coup of its own next turn.",
      _four(["duke", "captain"], ["assassin", "contessa"], ["ambassador"], ["contessa", "assassin"]),
      revealed=([], [], ["captain"], []), coins=(10, 1, 8, 1), turn=20, sound=("coup:2",)),
    S("coup_wins_the_endgame", "action", "Two players left on one card each: a coup (unblockable, unchallengeable) "
      "ends the match now; anything else gives the opponent a turn.",
      _four(["duke"], [], ["captain"], []), revealed=(["contessa"], ["assassin", "contessa"], ["ambassador"],
                                                      ["ambassador", "captain"]),
      coins=(7, 0, 4, 0), turn=40, sound=("coup:2",)),
    S("coup_not_a_blockable_assassination", "action", "Last opponent on one card, 7 coins and an assassin in hand: "
      "the coup wins for certain, the assassination can still be blocked by a contessa.",
      _four(["assassin"], [], ["captain"], []), revealed=(["duke"], ["duke", "duke"], ["ambassador"],
                                                         ["ambassador", "captain"]),
      coins=(7, 0, 4, 0), turn=40, sound=("coup:2",)),
    S("unblockable_assassination_endgame", "action", "All three contessas are visible (two revealed, one in my "
      "hand): the assassination cannot be blocked, I hold the assassin so a challenge fails, and the last "
      "opponent is on one card: it wins the match.",
      _four(["assassin", "contessa"], [], ["duke"], []), revealed=([], ["contessa", "captain"], ["contessa"],
                                                                  ["ambassador", "captain"]),
      coins=(3, 0, 2, 0), turn=30, sound=("assassinate:2",)),
    S("assassinate_one_card_leader", "action", "Seat 3 is on one card with 6 coins; every contessa is visible, so my "
      "true assassin claim kills it for 3 coins with no block and no successful challenge.",
      _four(["assassin", "contessa"], ["duke"], ["ambassador", "duke"], ["captain"]),
      revealed=([], ["contessa"], [], ["contessa"]), coins=(4, 2, 2, 6), turn=12, sound=("assassinate:3",)),
    S("steal_from_the_rich", "action", "With a captain, steal from the seat that has coins (seat 2, 4 coins): +2 for "
      "me and -2 for it; seat 1 has nothing to take.",
      _four(["captain", "contessa"], ["duke", "assassin"], ["duke", "assassin"], ["contessa", "ambassador"]),
      coins=(2, 0, 4, 1), turn=8, sound=("steal:2",)),
    S("foreign_aid_when_every_duke_is_out", "action", "All three dukes are revealed: a tax claim would be an "
      "impossible bluff, and foreign aid can only be blocked by an impossible duke claim: take foreign aid.",
      _four(["contessa", "contessa"], ["assassin"], ["ambassador"], ["captain"]),
      revealed=([], ["duke"], ["duke"], ["duke"]), coins=(1, 2, 2, 2), turn=10, sound=("foreign_aid",)),
    # ------------------------------------------------------------ blocks
    S("block_foreign_aid_with_duke", "react", "Seat 1 takes foreign aid; I hold a duke: the block is true, so it "
      "cannot be caught, and it denies 2 coins.",
      _four(["assassin", "contessa"], ["captain", "ambassador"], ["duke", "captain"], ["contessa", "assassin"]),
      current_player=1, moves=("foreign_aid",), sound=("block:duke",)),
    S("block_steal_with_captain", "react", "Seat 1 steals from me and I hold a captain: a true block keeps my coins "
      "at no risk.",
      _four(["assassin", "contessa"], ["duke", "ambassador"], ["captain", "duke"], ["contessa", "assassin"]),
      coins=(2, 2, 4, 2), current_player=1, moves=("steal:2",), sound=("block:captain",)),
    S("block_steal_with_ambassador", "react", "Seat 3 steals from me and I hold an ambassador: a true block keeps my "
      "coins at no risk.",
      _four(["ambassador", "contessa"], ["duke", "assassin"], ["captain", "duke"], ["contessa", "assassin"]),
      coins=(5, 2, 2, 2), current_player=3, turn=3, moves=("steal:0",), sound=("block:ambassador",)),
    S("assassinated_holding_contessa", "react", "Seat 3 assassinates me; I hold a contessa: block with it (true, so "
      "safe). Challenging risks losing both cards if the assassin is real.",
      _four(["contessa", "duke"], ["captain", "ambassador"], ["duke", "captain"], ["assassin", "ambassador"]),
      coins=(2, 2, 2, 3), current_player=3, turn=3, moves=("assassinate:0",), sound=("block:contessa",)),
    S("assassinated_on_last_card_holding_contessa", "react", "On my last card, assassinated, holding the contessa: "
      "the true block is the only play that keeps me in the game for sure.",
      _four(["contessa"], ["captain", "ambassador"], ["duke", "captain"], ["assassin", "ambassador"]),
      revealed=(["duke"], [], [], []), coins=(2, 2, 2, 3), current_player=3, turn=9, moves=("assassinate:0",),
      sound=("block:contessa",)),
    S("assassinated_on_last_card_without_contessa", "react", "On my last card, assassinated, without a contessa: "
      "passing loses the match for sure; a challenge (or a contessa bluff) is the only chance. CoupVisor's "
      "base-0.99 case: challenge.",
      _four(["duke"], ["captain", "ambassador"], ["duke", "captain"], ["assassin", "ambassador"]),
      revealed=(["captain"], [], [], []), coins=(2, 2, 2, 3), current_player=3, turn=9,
      moves=("assassinate:0",), sound=("challenge", "block:contessa"), advisor=True),
    # ------------------------------------------------------------ impossible claims: challenge
    S("impossible_tax", "react", "All three dukes are visible to me (two revealed, one in my hand): seat 1's tax "
      "is a bluff for certain; the challenge costs it a card.",
      _four(["duke", "captain"], ["assassin", "contessa"], ["ambassador"], ["contessa"]),
      revealed=([], [], ["duke"], ["duke"]), current_player=1, turn=5, moves=("tax", "pass", "pass"),
      sound=("challenge",), advisor=True),
    S("impossible_assassination", "react", "Two assassins are revealed and I hold the third: seat 2 cannot hold "
      "one; challenge its assassination of seat 3.",
      _four(["assassin", "duke"], ["captain"], ["ambassador", "duke"], ["contessa"]),
      revealed=([], ["assassin"], [], ["assassin"]), coins=(2, 2, 3, 2), current_player=2, turn=6,
      moves=("assassinate:3", "pass"), sound=("challenge",), advisor=True),
    S("impossible_steal", "react", "Every captain is visible to me (two revealed, one in my hand): seat 1's steal "
      "is a bluff; challenge.",
      _four(["captain", "duke"], ["assassin", "contessa"], ["ambassador"], ["contessa"]),
      revealed=([], [], ["captain"], ["captain"]), current_player=1, turn=5, moves=("steal:3", "pass", "pass"),
      sound=("challenge",), advisor=True),
    S("impossible_exchange", "react", "Every ambassador is visible to me: seat 3's exchange is a bluff; challenge.",
      _four(["ambassador", "duke"], ["assassin"], ["captain"], ["contessa", "assassin"]),
      revealed=([], ["ambassador"], ["ambassador"], []), current_player=3, turn=7, moves=("exchange",),
      sound=("challenge",), advisor=True),
    S("impossible_duke_block", "answer_block", "Seat 1 blocks my foreign aid with a duke, but I hold one duke and "
      "two are revealed: the block is a bluff; challenge it (it loses a card and my foreign aid goes on).",
      _four(["duke", "captain"], ["assassin", "contessa"], ["ambassador"], ["contessa"]),
      revealed=([], [], ["duke"], ["duke"]), turn=4, moves=("foreign_aid", "block:duke"), sound=("challenge",),
      advisor=True),
    S("impossible_contessa_block", "answer_block", "Seat 2 blocks my assassination with a contessa, but two are "
      "revealed and I hold the third: challenge; it loses the block's card and then the assassination's.",
      _four(["assassin", "contessa"], ["duke"], ["ambassador", "duke"], ["captain"]),
      revealed=([], ["contessa"], [], ["contessa"]), coins=(3, 2, 2, 2), turn=6,
      moves=("assassinate:2", "pass", "block:contessa"), sound=("challenge",), advisor=True),
    S("impossible_captain_block_of_my_steal", "answer_block", "The steal-block challenge: seat 1 blocks my steal "
      "with a captain while I hold one and two are revealed: the block is a bluff; challenge and the steal goes on.",
      _four(["captain", "duke"], ["assassin", "contessa"], ["ambassador"], ["contessa"]),
      revealed=([], [], ["captain"], ["captain"]), coins=(2, 4, 2, 2), turn=4, moves=("steal:1", "block:captain"),
      sound=("challenge",), advisor=True),
    S("impossible_ambassador_block_of_my_steal", "answer_block", "Seat 1 blocks my steal with an ambassador while I "
      "hold one and two are revealed: a bluff; challenge.",
      _four(["ambassador", "duke"], ["assassin", "contessa"], ["captain"], ["contessa"]),
      revealed=([], [], ["ambassador"], ["ambassador"]), coins=(2, 4, 2, 2), turn=4,
      moves=("steal:1", "block:ambassador"), sound=("challenge",), advisor=True),
    # ------------------------------------------------------------ caught bluffs (observation "disproven")
    S("caught_bluff_taxes_again", "react", "Seat 1 was caught bluffing a duke (its hand unchanged since): its new tax "
      "claim is proven false; challenge and it is out.",
      _four(["captain", "contessa"], ["assassin", "ambassador"], ["duke", "captain"], ["contessa", "duke"]),
      moves=("income", "tax", "challenge", "reveal:0", "income", "income", "income", "tax", "pass", "pass"),
      sound=("challenge",), advisor=True),
    S("caught_bluff_steals_again", "react", "Seat 1 was caught bluffing a captain (its hand unchanged since) and "
      "steals from me again: proven false; challenge and it is out.",
      _four(["duke", "contessa"], ["assassin", "ambassador"], ["duke", "captain"], ["contessa", "duke"]),
      moves=("income", "steal:0", "challenge", "reveal:0", "income", "income", "income", "steal:0", "pass",
             "pass"),
      sound=("challenge",), advisor=True),
    S("caught_bluff_blocks_again", "answer_block", "Seat 1 was caught bluffing a duke block of my foreign aid; it "
      "blocks my foreign aid with a duke again, its hand unchanged: proven false; challenge.",
      _four(["captain", "contessa"], ["assassin", "ambassador"], ["duke", "captain"], ["contessa", "duke"]),
      moves=("foreign_aid", "block:duke", "challenge", "reveal:0", "income", "income", "income", "foreign_aid",
             "block:duke"),
      sound=("challenge",), advisor=True),
    # ------------------------------------------------------------ last-card restraint: pass
    S("last_card_lets_a_tax_pass", "react", "On my last card, a challenge of seat 1's first tax risks elimination "
      "to stop 3 coins that do not threaten a coup; let it pass.",
      _four(["captain"], ["duke", "ambassador"], ["assassin", "captain"], ["contessa", "assassin"]),
      revealed=(["contessa"], [], [], []), coins=(3, 1, 2, 2), current_player=1, turn=9, moves=("tax", "pass", "pass"),
      sound=("pass",), advisor=False),
    S("last_card_lets_an_exchange_pass", "react", "On my last card, an exchange by another seat costs me nothing; "
      "a challenge risks elimination; pass.",
      _four(["captain"], ["duke", "ambassador"], ["assassin", "captain"], ["contessa", "assassin"]),
      revealed=(["contessa"], [], [], []), coins=(3, 1, 2, 2), current_player=1, turn=9,
      moves=("exchange", "pass", "pass"), sound=("pass",), advisor=False),
    S("no_duke_lets_foreign_aid_pass", "react", "Without a duke, blocking seat 1's foreign aid is a bluff that risks "
      "a card to deny 2 coins: pass.",
      _four(["assassin", "contessa"], ["captain", "ambassador"], ["captain", "ambassador"], ["contessa", "assassin"]),
      current_player=1, moves=("foreign_aid",), sound=("pass",)),
    # ------------------------------------------------------------ losing influence, exchanges
    S("reveal_the_useless_contessa", "lose", "Couped, I must lose a card; every assassin is revealed, so a contessa "
      "can never block again: give it up and keep the duke.",
      _four(["duke", "contessa"], ["captain"], ["captain"], ["ambassador"]),
      revealed=([], ["assassin"], ["assassin"], ["assassin"]), coins=(2, 2, 2, 7), current_player=3, turn=15,
      moves=("coup:0",), sound=("reveal:contessa",)),
    S("late_exchange_keeps_the_duke", "exchange", "Late, on one card, exchanging: I drew a duke and a contessa with "
      "every assassin revealed; keep the duke (tax income, blocks foreign aid): the contessa can never block.",
      _four(["ambassador"], [], ["captain", "duke"], ["ambassador"]),
      revealed=(["captain"], ["assassin", "assassin"], [], ["assassin"]), deck=("duke", "contessa"),
      turn=42, moves=("exchange", "pass", "pass"), sound=("keep:duke",)),
    S("late_exchange_drops_the_contessa", "exchange", "Exchanging with two cards: every assassin is out of play, so "
      "the contessa is dead weight; keep the duke I drew and a steal-blocker (captain or ambassador).",
      _four(["ambassador", "contessa"], ["duke"], ["ambassador"], ["contessa"]),
      revealed=([], ["assassin"], ["assassin"], ["assassin"]), deck=("duke", "captain"), turn=35,
      moves=("exchange", "pass", "pass", "pass"), sound=("keep:duke+captain", "keep:duke+ambassador")),
)


def build_all(scenarios=SCENARIOS) -> list[tuple[Scenario, Match]]:
    return [(s, s.build()) for s in scenarios]


def decision_inputs(built) -> tuple[np.ndarray, np.ndarray]:
    """(observations [S, obs], legal masks [S, A]) of the built scenarios' decisions."""
    return (np.stack([np.asarray(m.state.observation) for _, m in built]),
            np.stack([np.asarray(m.state.legal_action_mask) for _, m in built]))


def score_policy(policy, built, probs=None) -> dict:
    """name -> {mass, hit} of one policy over built scenarios (module doc): ``policy`` is
    called on each Match's state (it reads only the acting seat's observation and
    mask), or ``probs`` [S, A] gives its distributions at `decision_inputs`."""
    out = {}
    for i, (s, m) in enumerate(built):
        n = m.num_players
        if probs is None:
            logits = np.asarray(policy(jax.random.PRNGKey(i), m.state))
            p = np.exp(logits - logits.max())
            p = p / p.sum()
        else:
            p = np.asarray(probs[i], np.float64)
        seat = m.current_player
        ids = [rules.action_id(a, seat, n) for a in s.sound_names(m)]
        out[s.name] = {"mass": float(p[ids].sum()), "hit": bool(int(np.argmax(p)) in ids)}
    return out


def score_teacher(env, spec: str, cfg, built, keys: int = 8, seed: int = 0) -> dict:
    """`score_policy` of the search that makes a self-play run's targets
    (`training.search_targets.teacher` under ``cfg``) with the network ``spec`` (an export,
    at temperature 1 as in training; or any policy spec) as its prior,
    its probabilities averaged over ``keys`` searches: the target a network at that point
    of training is pulled towards, in expectation.  Why: a network that fits these targets
    plays their most likely move, so a scenario the teacher misses is one the cross-entropy
    teaches wrong (PPO's own rewards may still get it right).  Each scenario's row also has
    ``values``: per searched action, the mean and sd over the searches of its value."""
    export = selfplay_search.export_dir(spec)
    # training's prior is the network's distribution (temperature 1), not the export's greedy play
    policy = (load_policy(export, temperature=1.0, num_players=env.num_players)
              if (export / "policy.json").is_file() else resolve_policy(spec, env))
    value = None  # rollouts cut by the search's heuristic value
    if cfg.search_target_rollout_policy == "network":
        value = selfplay_search.load_value(export)
        if value is None:
            raise ValueError(f"{spec}: the teacher's cut rollouts need the export's value head; it has none")

    def net(k, s):
        return jnp.where(s.legal_action_mask, policy(k, s), -jnp.inf)

    decide = jax.jit(teacher(env, cfg, net, value))
    states = jax.tree.map(lambda *x: jnp.stack(x), *[m.state for _, m in built])
    probs, values = [], []
    for k in jax.random.split(jax.random.PRNGKey(seed), keys):
        logp, res = decide(jax.random.split(k, len(built)), states)
        probs.append(np.exp(np.asarray(logp)))
        values.append(np.asarray(res.q))
    scores = score_policy(None, built, np.mean(probs, axis=0))
    values, ids, valid = np.stack(values), np.asarray(res.action_ids), np.asarray(res.valid)
    for i, (s, m) in enumerate(built):  # the rollouts' values behind each target: why it hits or misses
        scores[s.name]["values"] = {
            rules.action_name(int(ids[i, j]), m.current_player, m.num_players):
                {"mean": float(values[:, i, j].mean()), "sd": float(values[:, i, j].std(ddof=1)) if keys > 1 else 0.0}
            for j in np.flatnonzero(valid[i])}
    return scores


def score_advisor(built, belief: str, params: AdvisorParams | None = None) -> dict:
    """name -> {challenge, p_truth, theta, correct} of the advisor on scenarios with an
    ``advisor`` answer."""
    params = advice_params() if params is None else params  # the page's constants, as every table of the report
    sel = [(s, m) for s, m in built if s.advisor is not None]
    if not sel:
        return {}
    n = sel[0][1].num_players
    obs = jnp.asarray(np.stack([np.asarray(m.state.observation) for _, m in sel]))
    adv = jax.jit(jax.vmap(lambda o: advise_challenge(o, n, belief, params)))(obs)
    out = {}
    for i, (s, _) in enumerate(sel):
        ch = bool(adv["challenge"][i])
        out[s.name] = {"challenge": ch, "p_truth": float(adv["p_truth"][i]), "theta": float(adv["theta"][i]),
                       "correct": ch == s.advisor}
    return out


def main(argv=None) -> dict:
    """``python -m evals.report.decision_benchmark --policy SPEC [--teacher CONFIG [--set
    key=value ...]] [--out FILE]``: the scenarios where the policy (or, with ``--teacher``,
    the search-target teacher of that training config at that network) puts its most
    likely play on a sound move; the JSON maps a label to `score_policy`'s table."""
    ap = Parser(prog=PROG, description="the decision scenarios where a policy, or the search-target "
                                       "teacher of a training config at that network, plays the sound move")
    ap.add_argument("--policy", required=True, help="policy spec (the teacher's prior with --teacher)")
    ap.add_argument("--teacher", help="score the search targets of this training config (a file or shipped name)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a --teacher config key")
    ap.add_argument("--keys", type=positive_int, default=8, help="searches averaged per scenario (--teacher)")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    if args.set and not args.teacher:
        ap.error("--set overrides the --teacher config: give --teacher too")
    env = Env(4)
    built = build_all()
    try:
        describe_spec(args.policy)
        if args.teacher:
            cfg = load_config(config_file(args.teacher), args.set)
            if not isinstance(cfg, SelfPlayConfig):
                raise ConfigError(f"{args.teacher}: not a self-play config (no search targets)")
            label = f"teacher of {args.teacher}{''.join(' --set ' + o for o in args.set)} at {args.policy}"
            scores = {label: score_teacher(env, args.policy, cfg, built, args.keys)}
        else:
            scores = {args.policy: score_policy(resolve_policy(args.policy, env), built)}
    except (PolicySpecError, ConfigError, ValueError) as err:
        fail(PROG, err)
    for label, table in scores.items():
        missed = [name for name, row in table.items() if not row["hit"]]
        print(f"{label}: sound move in {len(table) - len(missed)} of {len(table)}"
              + (f"; missed: {', '.join(missed)}" if missed else ""))
    if args.out:
        args.out.write_text(json.dumps(scores, indent=1))
    return scores


if __name__ == "__main__":
    main()
