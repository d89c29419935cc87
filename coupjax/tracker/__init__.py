"""A seat's view of a real game: the public-information tracker (see `core`).

entries   the entry schema a page builds from taps, and the seat's view of an event
worlds    the card timeline of a record and the search for hidden worlds that fit it
rulebook  the rule an impossible entry breaks, in words
core      `Tracker`: entries in, an engine state, observation and views out
"""
from coupjax.tracker.core import Tracker
from coupjax.tracker.entries import ALL_PASSED, Entry, TrackerError, entry_from_event, public_view, seat_event

__all__ = ["Tracker", "Entry", "TrackerError", "ALL_PASSED", "entry_from_event", "public_view", "seat_event"]
