"""The game of Coup as pure functions on `coupjax.state.State`.

tables   the rules' tables per table size, one-hot lookups
board    public facts every stage reads, and the one definition of a match's result
stages   the stage functions of a step and `apply_action`, their chain
views    the observation, its layout, and the legal mask
deal     the fresh-match template, random deals, explicit positions, sampled worlds,
         and readers of a state's cards

`coupjax.env.Env` is the thin Pgx-style wrapper over these.
"""
