"""The bot arena: external programs and our policies at the same tables.

protocol    the JSON-lines messages and the checks of a bot's replies (docs/bots.md)
process     one bot seat: a subprocess with timeouts, its stderr in a log file
tournament  seating, concurrent matches, forfeits with reasons, the results (`Arena`)

``python -m coupjax arena --bot NAME=COMMAND ... --policy SPEC ...`` runs it.
"""
from coupjax.botarena.protocol import PROTOCOL_VERSION, REASONS
from coupjax.botarena.tournament import (DEFAULT_MOVE_TIMEOUT, Arena, ArenaError, Entrant, parse_bot, parse_policy,
                                         results_table, seatings)

__all__ = ["PROTOCOL_VERSION", "REASONS", "DEFAULT_MOVE_TIMEOUT", "Arena", "ArenaError", "Entrant", "parse_bot",
           "parse_policy", "results_table", "seatings"]
