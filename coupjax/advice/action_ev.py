"""One-step expected values of the main actions from ONE seat's observation.

`recommend_action` scores every legal main action by a one-step expected value in
coins (`EVParams`; see its docstring), with the opponents' roles from the exact
posterior; the ``belief_ev`` policy (`coupjax.policies.belief_ev`) plays on it.
Pure, fixed-shape and jit/vmap-able (``num_players`` static).
"""
from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from coupjax import rules
from coupjax.advice.challenge import AdvisorParams
from coupjax.beliefs import posterior as POST
from coupjax.game.tables import tables
from coupjax.observation import ObsView, parse


@struct.dataclass
class EVParams:
    """Constants of the one-step action value (coin units) and of belief_ev's play.

    kill_coins: value of an opponent losing a card (x elim_factor when that eliminates
    it, x (1 + leader_bonus * threat share) for the most threatening seats);
    lose_coins / lose_last_coins: my loss of one of two cards / of my last card;
    steal_harm: weight of the coins a steal takes from its victim; rich_coin_value: value
    of a coin gained while I already hold 7+ (a coup is paid for); exchange_coins: value
    of an exchange; challenge_rate: P(one opponent challenges my claim) (prior, raised
    by that seat's challenge record); bluff_block_rate: P(an opponent lacking the role
    bluff-blocks); bluff_margin: a bluff must beat the best honest action by this much.
    """

    kill_coins: float = 8.0
    elim_factor: float = 1.5
    leader_bonus: float = 0.5
    lose_coins: float = 10.0
    lose_last_coins: float = 25.0
    steal_harm: float = 0.5
    rich_coin_value: float = 0.3
    exchange_coins: float = 1.0
    challenge_rate: float = 0.2
    record_weight: float = 0.1
    bluff_block_rate: float = 0.15
    bluff_margin: float = 3.0


def threat_scores(v: ObsView, n):
    """f32[n] threat score of each live opponent (coins + 3 per hidden card), 0 for me / dead."""
    opp = (v.hidden > 0) & (jnp.arange(n) > 0)
    return jnp.where(opp, v.coins.astype(jnp.float32) + 3.0 * v.hidden.astype(jnp.float32), 0.0)


def challenge_probs(v: ObsView, n, ev: EVParams):
    """f32[n]: estimated P(seat k challenges my claim) (0 for me and dead seats).

    Prior ``challenge_rate``, raised by ``record_weight`` per challenge the seat has been
    involved in per 10 turns (a seat that challenges shows up there; so does a seat
    that gets challenged, which is why the weight is small)."""
    opp = (v.hidden > 0) & (jnp.arange(n) > 0)
    involved = (v.challenges_won + v.challenges_lost).astype(jnp.float32)
    per_turn = involved / (1.0 + v.turn.astype(jnp.float32) / 10.0)
    c = jnp.clip(ev.challenge_rate + ev.record_weight * per_turn, 0.0, 0.9)
    return jnp.where(opp, c, 0.0)


# What `recommend_action` subtracts from a bluff that does not beat the best honest action
# by ``bluff_margin``: it stays legal and finite but below every other legal main action.
REJECTED_BLUFF_PENALTY = 1e3


def recommend_action(obs, mask, num_players: int, params: AdvisorParams = AdvisorParams(),
                     ev: EVParams = EVParams(), posterior: dict | None = None) -> dict:
    """One-step expected value (coins) of every legal main action (jittable).

    Model (the exact posterior gives every opponent's role marginals and hands):

    * income +1; foreign aid +2 x P(no opponent blocks with a duke: holds one, or
      bluff-blocks at ``bluff_block_rate``); tax +3; exchange ``exchange_coins``;
      steal:t  s (1 + steal_harm) x P(t does not block with captain/ambassador),
      s = min(2, t's coins); assassinate:t  -3 + H_t x P(t does not block with contessa);
      coup:t  -7 + H_t.  H_t = kill_coins x elim_factor (if t has one card) x (1 +
      leader_bonus x t's share of the largest threat: coins + 3 per card).  Coins gained
      while holding 7+ count ``rich_coin_value`` each.
    * A claim of a role I do not hold (a bluff) is challenged with p_c = 1 - prod_k (1 -
      c_k) (`challenge_probs`); then it fails (assassinate's 3 coins come back) and I
      lose a card: EV = (1 - p_c) EV_honest - p_c x (lose_coins or lose_last_coins);
      a bluff must beat the best honest action by ``bluff_margin``.

    ``posterior``: `coupjax.beliefs.posterior.exact_posterior` of ``obs`` under
    ``params.posterior_params()``, when the caller has it already (belief_ev shares one
    with `coupjax.advice.challenge.advise_challenge`); computed here otherwise.

    Returns ``ev`` f32[A] (-inf on illegal and non-main actions), ``best`` i32 (-1 if no
    main action is legal), ``bluff`` bool[A], ``rejected_bluff`` bool[A] (a bluff that does
    not beat the best honest action by ``bluff_margin``: its ``ev`` is lowered by
    `REJECTED_BLUFF_PENALTY`), ``p_challenge`` f32[], ``p_block`` f32[A], ``gain`` f32[A]
    (EV if not challenged; blocks included).
    """
    n = num_players
    T = tables(n)
    lay = T.layout
    v = parse(obs, n)
    post = POST.exact_posterior(obs, n, params.posterior_params()) if posterior is None else posterior
    marg = post["role_marginals"]
    has = jnp.asarray(POST.HAND_HAS)
    p_cap_amb = post["hand_probs"] @ (1.0 - (1.0 - has[:, rules.CAPTAIN]) * (1.0 - has[:, rules.AMBASSADOR]))
    opp = (v.hidden > 0) & (jnp.arange(n) > 0)
    bb = ev.bluff_block_rate
    coins = v.coins.astype(jnp.float32)
    my_coins = coins[0]
    coin_v = lambda g: jnp.where(my_coins >= 7, ev.rich_coin_value * g, g)  # noqa: E731

    threat = threat_scores(v, n)
    share = threat / jnp.maximum(threat.max(), 1.0)
    harm = ev.kill_coins * jnp.where(v.hidden == 1, ev.elim_factor, 1.0) * (1.0 + ev.leader_bonus * share)
    harm = jnp.where(opp, harm, 0.0)
    blk = lambda pr: jnp.where(opp, pr + (1.0 - pr) * bb, 0.0)  # noqa: E731
    p_fa_block = 1.0 - jnp.prod(1.0 - blk(marg[:, rules.DUKE]))
    p_ass_block = blk(marg[:, rules.CONTESSA])
    p_steal_block = blk(p_cap_amb)
    stake = jnp.minimum(2.0, coins)

    gain = jnp.full(T.num_actions, -jnp.inf, jnp.float32)
    p_block = jnp.zeros(T.num_actions, jnp.float32)
    gain = gain.at[0].set(coin_v(1.0))
    gain = gain.at[1].set(coin_v(2.0) * (1.0 - p_fa_block))
    p_block = p_block.at[1].set(p_fa_block)
    gain = gain.at[2].set(coin_v(3.0))
    gain = gain.at[3].set(ev.exchange_coins)
    gain = gain.at[lay.coup:lay.coup + n].set(-7.0 + harm)
    gain = gain.at[lay.assassinate:lay.assassinate + n].set(-3.0 + harm * (1.0 - p_ass_block))
    p_block = p_block.at[lay.assassinate:lay.assassinate + n].set(p_ass_block)
    gain = gain.at[lay.steal:lay.steal + n].set((coin_v(stake) + ev.steal_harm * stake) * (1.0 - p_steal_block))
    p_block = p_block.at[lay.steal:lay.steal + n].set(p_steal_block)

    c = challenge_probs(v, n, ev)
    p_chal = 1.0 - jnp.prod(1.0 - c)
    lose = jnp.where(v.hidden[0] == 1, ev.lose_last_coins, ev.lose_coins)
    bluff = mask & (jnp.asarray(T.action_claim) >= 0) & (v.own_counts[jnp.clip(jnp.asarray(T.action_claim), 0)] == 0)
    value = jnp.where(bluff, (1.0 - p_chal) * gain - p_chal * lose, gain)
    legal_main = mask & jnp.asarray(T.is_main)
    value = jnp.where(legal_main, value, -jnp.inf)
    best_honest = jnp.max(jnp.where(legal_main & ~bluff, value, -jnp.inf))
    rejected = bluff & (value < best_honest + ev.bluff_margin)
    value = jnp.where(rejected, value - REJECTED_BLUFF_PENALTY, value)  # penalised, still finite
    best = jnp.where(legal_main.any(), jnp.argmax(value), -1).astype(jnp.int32)
    return dict(ev=value, best=best, bluff=bluff, rejected_bluff=rejected, p_challenge=p_chal, p_block=p_block,
                gain=jnp.where(legal_main, gain, -jnp.inf))
