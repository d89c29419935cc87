"""The player's page: a game at a real table entered by taps with advice, replay, practice.

store     the games directory (each game's record in the repository's formats, plus the page's side)
words     choices, events and advice in plain words
advice    the tracker's advice with the style, and in sentences
table     `TableGame`: a tracked game entered by taps, warnings, undo
practice  `PracticeGame`: a match against policies, advice on request
replay    replay frames of any saved game
app       the FastAPI app (`create_app`)
server    `serve`: uvicorn, the address and the token (``coupjax serve``)
static/   the page itself: plain HTML, CSS and JS, no build step
"""
