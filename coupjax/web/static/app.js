// coupjax: the player's page. Plain JS, no build step, nothing fetched but this server's /api.
"use strict";

const ROLES = ["duke", "assassin", "captain", "ambassador", "contessa"];
const S = {
  info: null, screen: "start", game: null, replay: null, pending: null, fixing: null,
  beliefs: localStorage.getItem("coupjax.beliefs") || "both", search: true, version: 0,
};
window.coupjax = { timings: [], state: S };

const $ = (sel, root = document) => root.querySelector(sel);
const cap = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);
const fmt = (x, d = 2) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
const sign = (x) => (x >= 0 ? "+" : "-") + Math.abs(x).toFixed(2);  // one minus sign: the ASCII one, as the words module
const plural = (k, noun, many) => `${k} ${k === 1 ? noun : many || noun + "s"}`;
const policyName = (p) => (S.info && S.info.policy_names && S.info.policy_names[p]) || p;

function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "style") el.setAttribute("style", v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function toast(msg) {
  const t = $("#toast");
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), 6000);
}

async function api(method, path, body) {
  $("#busy").hidden = false;
  try {
    const res = await fetch(path, {
      method, headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined, credentials: "same-origin",
    });
    const data = await res.json().catch(() => ({ detail: res.statusText }));
    if (!res.ok) throw new Error(data.detail || res.statusText);
    return data;
  } finally {
    $("#busy").hidden = true;
  }
}

function searchParam() { return S.search ? "" : "search=0"; }
function withParams(path, ...ps) {
  const q = ps.filter(Boolean).join("&");
  return q ? `${path}?${q}` : path;
}

// ------------------------------------------------------------------ routing
function go(hash) { if (location.hash !== hash) location.hash = hash; else route(); }
window.addEventListener("hashchange", route);
$("#home").addEventListener("click", () => go("#/"));

async function route() {
  const m = location.hash.match(/^#\/(game|replay)\/([^/?]+)(?:\/(\d+))?/);
  S.pending = null; S.fixing = null;
  try {
    if (!S.info) S.info = await api("GET", "/api/info");
    S.search = S.info.search && S.search;
    if (m && m[1] === "game") {
      S.screen = "game";
      S.game = await api("GET", withParams(`/api/games/${m[2]}`, searchParam()));
      restorePending(S.game);
    } else if (m && m[1] === "replay") {
      S.screen = "replay";
      await loadReplay(m[2], Number(m[3] || 0), null);
    } else {
      S.screen = "start";
      const list = await api("GET", "/api/games");
      S.games = list.games; S.skipped = list.skipped || [];
    }
  } catch (e) {
    toast(e.message);
    S.screen = "start";
    S.games = S.games || [];
  }
  render();
}

// A follow-up question open at a reload: the half-entered step is kept in the tab's session
// and given back if the game has not moved since, else the page says the step was dropped.
function pendingKey(g) { return `coupjax.pending.${g.id}`; }
function keepPending() {
  const g = S.game;
  if (!g || S.screen !== "game") return;
  if (S.pending) sessionStorage.setItem(pendingKey(g), JSON.stringify({ steps: g.log.length, pending: S.pending }));
  else sessionStorage.removeItem(pendingKey(g));
}
function restorePending(g) {
  const saved = sessionStorage.getItem(pendingKey(g));
  if (!saved) return;
  sessionStorage.removeItem(pendingKey(g));
  try {
    const { steps, pending } = JSON.parse(saved);
    if (steps === g.log.length && !g.done) { S.pending = pending; toast("Your half-entered step is back: answer the question to enter it."); }
    else toast("A half-entered step was dropped: the game changed since.");
  } catch (e) { /* an unreadable note: nothing to give back */ }
}

// ------------------------------------------------------------------ render
async function render(t0) {
  const app = $("#app");
  app.replaceChildren(S.screen === "game" ? gameScreen() : S.screen === "replay" ? replayScreen() : startScreen());
  keepPending();
  const where = `${S.screen}/${S.screen === "game" ? S.game.id : S.screen === "replay" ? S.replay.id : ""}`;
  if (where !== render.where) window.scrollTo(0, 0);  // a new screen starts at its top
  const over = S.screen === "game" && S.game.done ? $("#game-over") : null;
  if (over && render.over !== where) over.scrollIntoView({ block: "start" });  // the result, whatever was scrolled
  render.over = over ? where : render.over;
  render.where = where;
  S.version += 1;
  app.dataset.version = S.version;
  app.dataset.screen = S.screen;
  if (t0 !== undefined) {
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    window.coupjax.timings.push({ ms: performance.now() - t0, advice: !!(S.game && S.game.advice) });
  }
}

// ------------------------------------------------------------------ start
function seatOptions(n, names, selected) {
  return Array.from({ length: n }, (_, i) => h("option", { value: i, selected: i === selected }, names[i] || `Seat ${i}`));
}

function startScreen() {
  $("#title").textContent = "Games";
  const box = h("div", { class: "start" });
  box.append(tableForm(), practiceForm(), savedGames());
  return box;
}

function tableForm() {
  const f = S.form || (S.form = { n: 4, names: ["Ann", "Bea", "Cal", "Dan", "Eve", "Fay"], seat: 0, first: 0, hand: ["duke", "captain"], style: "balanced" });
  const sec = h("section", { class: "card", id: "new-table" }, h("h2", {}, "A game at a table"),
    h("p", { class: "hint" }, "Enter what happens at a real table; the page advises you at your decisions."));
  const players = h("select", { id: "t-players", onchange: (e) => { f.n = +e.target.value; f.seat = Math.min(f.seat, f.n - 1); f.first = Math.min(f.first, f.n - 1); warmFor(f.n); render(); } },
    [2, 3, 4, 5, 6].map((k) => h("option", { value: k, selected: k === f.n }, k)));
  sec.append(h("label", {}, "Players ", players));
  const names = h("div", { class: "names" });
  for (let i = 0; i < f.n; i++) {
    names.append(h("input", { id: `t-name-${i}`, value: f.names[i], maxlength: 24, "aria-label": `Name of seat ${i}`, oninput: (e) => (f.names[i] = e.target.value) }));
  }
  sec.append(h("div", { class: "field" }, h("span", {}, "Names, in seating order"), names));
  sec.append(h("label", {}, "I am ", h("select", { id: "t-seat", onchange: (e) => (f.seat = +e.target.value) }, seatOptions(f.n, f.names, f.seat))));
  sec.append(h("label", {}, "Starts ", h("select", { id: "t-first", onchange: (e) => (f.first = +e.target.value) }, seatOptions(f.n, f.names, f.first))));
  const hand = h("span", {});
  for (let k = 0; k < 2; k++) {
    hand.append(h("select", { id: `t-card-${k}`, "aria-label": `My card ${k + 1}`, onchange: (e) => (f.hand[k] = e.target.value) },
      ROLES.map((r) => h("option", { value: r, selected: r === f.hand[k] }, cap(r)))));
  }
  sec.append(h("label", {}, "My cards ", hand));
  sec.append(styleSelect(f.style, (v) => (f.style = v), "t-style"));
  sec.append(h("button", {
    class: "primary", id: "start-table", onclick: async () => {
      try {
        const g = await api("POST", "/api/games", { num_players: f.n, names: f.names.slice(0, f.n), seat: f.seat, first: f.first, hand: f.hand, style: f.style });
        S.game = g; go(`#/game/${g.id}`);
      } catch (e) { toast(e.message); }
    },
  }, "Start"));
  return sec;
}

function practiceForm() {
  const f = S.pform || (S.pform = { n: 4, seat: 0, spec: "belief_ev", other: "", style: "balanced", names: ["", "Bea", "Cal", "Dan", "Eve", "Fay"], specs: {} });
  const pols = Object.keys(S.info.policies || {});
  const specOf = (i) => f.other.trim() || f.specs[i] || f.spec;
  const warmBot = () => { for (const s of new Set(Array.from({ length: f.n }, (_, i) => specOf(i)))) warmFor(f.n, s); };
  const polOptions = (sel) => pols.map((p) => h("option", { value: p, selected: p === sel, title: S.info.policies[p].replace(/\b[a-z]+_[a-z_]+\b/g, (w) => policyName(w)) }, policyName(p)));
  const sec = h("section", { class: "card", id: "new-practice", onfocusin: warmBot }, h("h2", {}, "Practice"),
    h("p", { class: "hint" }, "Play a match against our bots: any registered policy for each seat, or a run or export directory."));
  sec.append(h("label", {}, "Players ", h("select", { id: "p-players", onchange: (e) => { f.n = +e.target.value; f.seat = Math.min(f.seat, f.n - 1); render(); } },
    [2, 3, 4, 5, 6].map((k) => h("option", { value: k, selected: k === f.n }, k)))));
  sec.append(h("label", {}, "My seat ", h("select", { id: "p-seat", onchange: (e) => { f.seat = +e.target.value; render(); } },
    Array.from({ length: f.n }, (_, i) => h("option", { value: i, selected: i === f.seat }, i === 0 ? "0 (first to play)" : i)))));
  // one opponent for every seat, then each seat's own (its name and its policy)
  sec.append(h("label", {}, "Every opponent ", h("select", { id: "p-policy", onchange: (e) => { f.spec = e.target.value; f.specs = {}; warmBot(); render(); } },
    polOptions(f.spec))));
  sec.append(h("label", {}, "or a checkpoint ", h("input", { id: "p-spec", placeholder: "runs/NAME/export", value: f.other, oninput: (e) => (f.other = e.target.value) })));
  const bots = h("div", { class: "bot-rows" });
  let k = 1;
  for (let i = 0; i < f.n; i++) {
    if (i === f.seat) continue;
    const j = k++;
    bots.append(h("div", { class: "bot-row" },
      h("input", { id: `p-name-${i}`, value: f.names[j], maxlength: 24, "aria-label": `Name of the bot in seat ${i}`, oninput: (e) => (f.names[j] = e.target.value) }),
      h("select", { id: `p-policy-${i}`, "aria-label": `Policy of the bot in seat ${i}`, onchange: (e) => { f.specs[i] = e.target.value; warmFor(f.n, e.target.value); } },
        polOptions(f.specs[i] || f.spec))));
  }
  sec.append(h("div", { class: "field" }, h("span", {}, "The bots, in seating order: name and policy"), bots));
  sec.append(styleSelect(f.style, (v) => (f.style = v), "p-style"));
  sec.append(h("button", {
    class: "primary", id: "start-practice", onclick: async () => {
      try {
        const others = f.names.slice(1, f.n);
        const names = Array.from({ length: f.n }, (_, i) => (i === f.seat ? "" : others.shift() || ""));
        const opponents = Array.from({ length: f.n }, (_, i) => i).filter((i) => i !== f.seat).map(specOf);
        const g = await api("POST", "/api/practice", { num_players: f.n, seat: f.seat, names, opponents, style: f.style });
        S.game = g; go(`#/game/${g.id}`);
      } catch (e) { toast(e.message); }
    },
  }, "Start practice"));
  return sec;
}

// A saved game's name for people: its players, or an upload's file name, or the name the player gave.
function gameTitle(g) {
  if (g.title) return g.title;
  const up = g.id.match(/^\d{8}-\d{6}-upload-(.+)-[0-9a-f]{4}$/);
  if (up) return up[1];
  if (/^\d{8}-\d{6}-(table|practice)-[0-9a-f]{4}$/.test(g.id) && g.names) return g.names.join(", ");
  return g.id;
}

function savedGames() {
  const sec = h("section", { class: "card", id: "saved" }, h("h2", {}, "Saved games"));
  const games = S.games || [];
  if (!games.length) sec.append(h("p", { class: "hint" }, "None yet."));
  const list = h("ul", { class: "games" });
  for (const g of games) {
    const when = new Date(g.modified * 1000).toLocaleString();
    const name = gameTitle(g);
    const what = g.kind === "table" ? "table" : g.kind === "practice" ? "practice" : g.kind;
    const li = h("li", { "data-id": g.id });
    const steps = g.steps === null || g.steps === undefined ? "" : ` · ${plural(g.steps, "step")}`;
    li.append(h("span", { class: "g-main" }, h("b", { class: "g-name" }, name), h("small", {}, ` ${what}${steps}${g.done ? " · over" : ""} · ${when}`)));
    const tools = h("span", { class: "g-tools" });
    if ((g.kind === "table" || g.kind === "practice") && !g.done) tools.append(h("button", { onclick: () => go(`#/game/${g.id}`), "aria-label": `Continue ${name}` }, "Continue"));
    tools.append(h("button", { onclick: () => go(`#/replay/${g.id}`), "aria-label": `Replay ${name}` }, "Replay"),
      h("button", { class: "rename", "aria-label": `Rename ${name}`, onclick: () => renameForm(li, g) }, "Rename"),
      h("a", { class: "button", href: `/api/games/${encodeURIComponent(g.id)}/download`, download: `${g.id}.jsonl`, "aria-label": `Download ${name}` }, "Download"),
      h("button", { class: "delete", "aria-label": `Delete ${name}`, onclick: (e) => deleteGame(e.currentTarget, g) }, "Delete"));
    li.append(tools);
    list.append(li);
  }
  sec.append(list);
  if (S.skipped && S.skipped.length) {
    sec.append(h("p", { class: "hint", id: "skipped" }, `${plural(S.skipped.length, "file")} in the folder could not be read: `,
      S.skipped.map((x) => `${x.id} (${x.error})`).join("; ")));
  }
  const up = h("input", {
    type: "file", accept: ".jsonl,.json,.txt", id: "upload", onchange: async (e) => {
      const file = e.target.files[0];
      if (!file) return;
      try {
        const { id } = await api("POST", "/api/upload", { name: file.name, text: await file.text() });
        go(`#/replay/${id}`);
      } catch (err) { toast(err.message); e.target.value = ""; }
    },
  });
  sec.append(h("label", { class: "field", for: "upload" }, "Replay a game file (a match or a seat record) "), up);
  return sec;
}

function renameForm(li, g) {
  const input = h("input", { value: gameTitle(g), maxlength: 100, "aria-label": "New name (letters, digits, spaces, _ . - # , ! ? ' ( ) &)", class: "rename-input" });
  const save = async () => {
    try { await api("POST", `/api/games/${encodeURIComponent(g.id)}/rename`, { name: input.value.trim() }); route(); }
    catch (e) { toast(e.message); }
  };
  li.replaceChildren(h("span", { class: "g-main rename-form" }, input),
    h("span", { class: "g-tools" }, h("button", { class: "primary", onclick: save }, "Save name"), h("button", { onclick: () => route() }, "Cancel")));
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") save(); });
  input.focus();
}

async function deleteGame(btn, g) {
  if (!btn.dataset.armed) { btn.dataset.armed = "1"; btn.textContent = "Really delete?"; btn.classList.add("danger"); return; }
  try { await api("DELETE", `/api/games/${encodeURIComponent(g.id)}`); } catch (e) { toast(e.message); }
  route();
}

function styleSelect(value, set, id) {
  return h("label", {}, "Advice style ", h("select", { id, onchange: (e) => set(e.target.value) },
    ["cautious", "balanced", "aggressive"].map((s) => h("option", { value: s, selected: s === value }, s))));
}

// ------------------------------------------------------------------ the table
function beliefSwitch() {
  const box = h("span", { class: "switch", role: "group", "aria-label": "Beliefs shown" });
  for (const [k, label] of [["both", "Both"], ["exact", "Exact posterior"], ["coupvisor", "CoupVisor"]]) {
    box.append(h("button", {
      class: S.beliefs === k ? "on" : "", "data-belief": k, "aria-pressed": S.beliefs === k ? "true" : "false",
      onclick: () => { S.beliefs = k; localStorage.setItem("coupjax.beliefs", k); render(); },
    }, label));
  }
  const legend = h("span", { class: "legend" }, "P(holds role): ");
  if (S.beliefs !== "coupvisor") legend.append(h("i", { class: "exact" }), "exact posterior");
  if (S.beliefs !== "exact") legend.append(h("i", { class: "coupvisor" }), "CoupVisor");
  return h("span", { class: "tools" }, box, legend);
}

function bars(b) {
  const box = h("div", { class: "bars" });
  for (const r of ROLES) {
    const row = h("div", { class: "bar-row", "data-role": r }, h("span", { class: "role" }, cap(r)));
    const cell = h("span", { class: "bar-cell" });
    const kinds = S.beliefs === "both" ? ["exact", "coupvisor"] : [S.beliefs];
    for (const k of kinds) {
      const p = b[k][r];
      cell.append(h("span", { class: `bar ${k}`, title: `${k === "exact" ? "exact posterior" : "CoupVisor"}: ${fmt(p)}` },
        h("span", { class: "fill", style: `width:${Math.round(p * 100)}%` }), h("span", { class: "num" }, fmt(p))));
    }
    row.append(cell);
    box.append(row);
  }
  // the claim on the table now: its chance as the advice reads it (the bar, corrected by how
  // often such claims were true in past games) -- the figure the advice's reasons quote
  if (b.claim) box.append(h("div", { class: "claim-line", "data-role": b.claim.role },
    `${cap(b.claim.role)} claim: true with probability ${fmt(b.claim.p_truth)}`));
  return box;
}

function cardChips(cards, cls) { return cards.map((c) => h("span", { class: `chip ${cls} ${c}` }, cap(c))); }

function seatsView(g, table, trueHands) {
  const grid = h("div", { class: "seats" });
  const beliefs = Object.fromEntries((g.beliefs || []).map((b) => [b.seat, b]));
  for (let s = 0; s < g.num_players; s++) {
    const mine = s === g.seat;
    const alive = table.hidden[s] > 0;
    const cls = ["seat", mine ? "me" : "", table.current_player === s ? "turn" : "", alive ? "" : "out"].join(" ");
    const card = h("div", { class: cls, "data-seat": s },
      h("div", { class: "seat-head" }, h("b", {}, g.names[s]), mine && g.names[s] !== "You" ? h("small", {}, " (you)") : null,
        table.current_player === s ? h("span", { class: "tag" }, "to act") : null,
        h("span", { class: "coins", title: "coins" }, plural(table.coins[s], "coin"))));
    const info = h("div", { class: "seat-info" });
    if (g.bots && g.bots[s]) info.append(h("div", { class: "bot" }, `Bot: ${g.bots[s]}`));
    if (mine) info.append(h("div", {}, "Hand: ", ...cardChips(g.hand, "hand"), g.drawn && g.drawn.length ? [" drawn: ", ...cardChips(g.drawn, "hand")] : null));
    else info.append(h("div", {}, `${plural(table.hidden[s], "card")} in hand`));
    if (trueHands && !mine && trueHands[s].length) info.append(h("div", { class: "true-hand" }, "True hand: ", ...cardChips(trueHands[s], "hand")));
    if (table.revealed[s].length) info.append(h("div", {}, "Revealed: ", ...cardChips(table.revealed[s], "dead")));
    const claims = Object.entries(table.claims[s]).map(([r, k]) => `${cap(r)}${k > 1 ? " ×" + k : ""}`);
    const blocks = Object.entries(table.blocks[s]).map(([r, k]) => `${cap(r)}${k > 1 ? " ×" + k : ""}`);
    if (claims.length) info.append(h("div", { class: "claims" }, "Claimed: " + claims.join(", ")));
    if (blocks.length) info.append(h("div", { class: "claims" }, "Blocked with: " + blocks.join(", ")));
    if (table.disproven[s].length) info.append(h("div", { class: "claims" }, "Caught bluffing: " + table.disproven[s].map(cap).join(", ")));
    card.append(info);
    if (!mine && beliefs[s]) card.append(bars(beliefs[s]));
    grid.append(card);
  }
  return grid;
}

// The table in one row per seat (who acts, coins, cards): what a phone shows right under the buttons.
function stripView(g, table) {
  const rows = [];
  for (let s = 0; s < g.num_players; s++) {
    const mine = s === g.seat, acting = table.current_player === s;
    const cards = mine ? cardChips(g.hand || [], "hand") : [plural(table.hidden[s], "card")];
    rows.push(h("tr", { "data-seat": s, class: [acting ? "turn" : "", table.hidden[s] > 0 ? "" : "out"].join(" ") },
      h("th", { scope: "row" }, g.names[s], mine && g.names[s] !== "You" ? " (you)" : "", acting ? h("span", { class: "tag" }, "to act") : null),
      h("td", {}, plural(table.coins[s], "coin")), h("td", {}, ...cards),
      h("td", {}, ...cardChips(table.revealed[s], "dead"))));
  }
  return h("table", { class: "strip", id: "strip", "aria-label": "The table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Seat"), h("th", { scope: "col" }, "Coins"), h("th", { scope: "col" }, "Cards"), h("th", { scope: "col" }, "Revealed"))),
    h("tbody", {}, rows));
}

function pendingText(p) {
  return `Preparing advice: ${Math.round(p.seconds)} s (compiling for a ${p.players}-player table, once; ` +
    "enter what happens meanwhile)";
}

// While the server compiles a table size's first advice, ask again: the server holds each
// ask until the advice is ready or a second has passed (a long poll), so the advice shows
// the moment it can and the progress still ticks.  An event entered meanwhile brings a
// newer page, which asks again itself if still pending.
function pollAdvice(delay = 0) {
  clearTimeout(pollAdvice.timer);
  pollAdvice.timer = setTimeout(async () => {
    const g = S.game;
    if (S.screen !== "game" || !g || !g.advice_pending) return;
    try {
      const res = await fetch(withParams(`/api/games/${g.id}`, searchParam(), "wait=1"), { credentials: "same-origin" });
      const fresh = res.ok ? await res.json() : null;
      if (!fresh || S.game !== g || S.screen !== "game") return pollAdvice(1000);
      S.game = fresh;
      if (!fresh.advice_pending) return render();
      const p = $("#advice-progress");
      if (p) p.textContent = pendingText(fresh.advice_pending);
      pollAdvice();
    } catch (e) { pollAdvice(1000); }
  }, delay);
}

function warmFor(n, practice) {  // compile the start form's table size (or practice opponent) now
  fetch("/api/warm", { method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
    body: JSON.stringify(practice ? { num_players: n, practice } : { num_players: n }) }).catch(() => {});
}

// In practice, the advice is asked for: the button and its answer (the recommendation and
// its reasons) sit between the prompt and the choices, so both are on the first screen of a
// phone whatever the number of choices; the numbers under them stay in the side column.
function practiceAsk(g) { return g.kind === "practice" && !g.done && g.table.current_player === g.seat && !g.advice_pending; }

function recommendedView(w) {
  const r = w.recommended;
  return [h("p", { class: "rec", id: "recommended" }, h("span", {}, "Recommended: "), h("b", {}, r.text),
    r.value !== undefined && r.value !== null ? h("small", {}, ` (value ${sign(r.value)} ± ${fmt(r.se)})`) : null,
    r.close_call ? h("small", { class: "close-call" }, " · close call") : null,
    h("small", { class: "src" }, ` · ${r.source}`)),
  r.reasons && r.reasons.length ? h("ul", { class: "reasons", id: "reasons" }, ...r.reasons.map((x) => h("li", {}, x))) : null];
}

function askView(g, onRequest) {
  const box = h("div", { class: "ask", id: "ask" });
  const w = g.advice_words;
  if (w && w.recommended) box.append(...recommendedView(w));
  else if (w) box.append(h("p", { class: "hint" }, "No advice at this decision."));
  else box.append(h("button", { id: "ask-advice", onclick: onRequest }, "Advice, please"));
  return box;
}

function adviceView(g, onRequest) {
  const box = h("section", { class: "card advice", id: "advice", "aria-live": "polite" }, h("h3", {}, "Advice"));
  const asked = practiceAsk(g);
  if (g.advice_pending) {
    box.append(h("p", { class: "hint", id: "advice-progress" }, pendingText(g.advice_pending)));
    pollAdvice();
    return box;
  }
  const w = g.advice_words;
  if (!w) {
    if (asked) {
      box.append(h("p", { class: "hint" }, "Ask for advice above the choices."));
    } else {
      box.append(h("p", { class: "hint" }, g.done ? "The game is over." : "Advice appears at your decisions."));
    }
    return box;
  }
  box.dataset.ready = "1";
  if (g.advice_for === "if_passed") box.append(h("p", { class: "hint" }, "If everyone before you passes:"));
  if (w.recommended && !asked) box.append(...recommendedView(w));
  else if (w.recommended) box.append(h("p", { class: "hint" }, "The recommendation is above the choices; its numbers:"));
  if (w.challenge) {
    const c = w.challenge;
    box.append(h("div", { class: "call", id: "challenge-call" },
      h("b", {}, "The claim"), h("span", { class: "nums" }, ` · chance it is true ${fmt(c.p_truth)} · a challenge pays below ${fmt(c.theta)}`),
      h("p", {}, c.sentence), h("details", { class: "why" }, h("summary", {}, "Why, in full"),
        h("ul", { class: "small" }, (Array.isArray(c.explanation) ? c.explanation : [c.explanation]).map((x) => h("li", {}, x))))));
  }
  if (w.values && w.values.length) {
    const top = Math.max(...w.values.map((v) => Math.abs(v.value) + v.se), 0.05);
    const tbl = h("div", { class: "values" }, h("div", { class: "hint" }, "Search values (expected result, -1 loss … +1 win, ± standard error):"));
    for (const v of w.values) {
      const left = 50 + (50 * Math.min(v.value, 0)) / top, width = (50 * Math.abs(v.value)) / top;
      tbl.append(h("div", { class: "val-row" }, h("span", { class: "val-name" }, v.text),
        h("span", { class: "val-bar" }, h("span", { class: `val-fill ${v.value >= 0 ? "pos" : "neg"}`, style: `left:${left}%;width:${width}%` })),
        h("span", { class: "val-num" }, `${sign(v.value)} ± ${fmt(v.se)}`)));
    }
    box.append(tbl);
  }
  box.append(h("p", { class: "hint" }, `Style: ${w.style}.`));
  return box;
}

function warningsView(g) {
  const open = (g.warnings || []).filter((w) => w.status === "open");
  const box = h("section", { class: "card warnings", id: "warnings", hidden: !open.length && !S.fixing },
    h("h3", {}, "Warnings"));
  for (const w of open) {
    box.append(h("div", { class: "warning", "data-warning": w.id },
      h("p", {}, h("b", {}, "Not entered: "), w.text),
      h("p", { class: "rule" }, "Breaks the rule: ", w.rule_text || w.rule),
      h("div", { class: "warning-tools" }, h("button", { class: "primary", onclick: () => correct(w) }, "Correct it"),
        h("button", { onclick: () => dismiss(w) }, "Dismiss"))));
  }
  if (S.fixing) box.append(h("p", { class: "hint" }, "Tap the right choice below: it replaces the entry in the warning."));
  return box;
}

function entryView(g, onRequest) {
  const box = h("section", { class: "card entry", id: "entry" });
  if (S.pending) {
    const p = S.pending, ask = p.asks[p.idx];
    box.append(h("p", { class: "question", "data-field": ask.field, "data-seat": ask.seat ?? null }, ask.question));
    const opts = h("div", { class: "choices" });
    for (const o of ask.options) opts.append(h("button", { class: "option", "data-testid": "option", "data-value": JSON.stringify(o.value), onclick: () => answer(o.value) }, o.label));
    box.append(opts, h("button", { class: "link cancel", onclick: () => { S.pending = null; render(); } }, "Cancel"));
    return box;
  }
  if (g.done) return null;
  if (g.narration && g.narration.length) box.append(narrationView(g.narration));
  box.append(h("p", { class: "prompt", id: "prompt" }, g.prompt));
  if (practiceAsk(g)) box.append(askView(g, onRequest));
  const opts = h("div", { class: "choices" });
  for (const c of g.choices) {
    const e = c.entry || {};
    opts.append(h("button", { class: `choice ${c.kind || ""}`, "data-testid": "choice", "data-seat": e.seat ?? null, "data-action": e.action || c.action, "data-role": e.reveals && e.reveals.length === 1 ? e.reveals[0].role : null, onclick: () => (g.kind === "practice" ? act(c.action) : choose(c)) }, c.label));
  }
  box.append(opts);
  return box;
}

function narrationView(lines) {
  return h("ul", { class: "narration", id: "narration", "aria-label": "What the others did" }, lines.map((x) => h("li", {}, x)));
}

function searchSwitch(onchange) {
  return h("button", { class: "toggle", id: "search-toggle", role: "switch", "aria-checked": S.search ? "true" : "false",
    "aria-label": "Search in the advice", onclick: () => { S.search = !S.search; onchange(); } }, `Search: ${S.search ? "on" : "off"}`);
}

function gameOverView(g) {
  const last = g.narration && g.narration.length ? g.narration : g.log.length ? [g.log[g.log.length - 1].text] : [];
  return h("section", { class: "over card", id: "game-over" }, h("p", { class: "over-head" }, g.prompt),
    last.length ? h("ul", { class: "narration", id: "narration", "aria-label": "How it ended" }, last.map((x) => h("li", {}, x[0].toUpperCase() + x.slice(1)))) : null);
}

function gameScreen() {
  const g = S.game;
  $("#title").textContent = g.kind === "practice" ? "Practice" : "At the table";
  const tools = h("div", { class: "tools game-tools" }, beliefSwitch(),
    styleSelect(g.style, async (v) => { S.game = await api("POST", withParams(`/api/games/${g.id}/style`, searchParam(), g.advice ? "advice=1" : ""), { style: v }); render(); }, "style"),
    S.info.search ? searchSwitch(route) : null,
    h("button", { onclick: () => go(`#/replay/${g.id}`) }, "Replay"));
  const log = h("details", { class: "card log", id: "log", open: window.innerWidth > 900 },
    h("summary", {}, `What happened (${plural(g.log.length, "step")})`),
    h("ol", { start: 0 }, g.log.slice().reverse().map((e) => h("li", { value: e.step }, e.text))));
  const undo = g.kind === "table" ? h("button", { id: "undo", disabled: !g.can_undo, onclick: undoLast, "aria-label": "Undo the last entry" }, "Undo") : null;
  const entry = entryView(g, requestAdvice);
  if (entry && undo) entry.append(h("div", { class: "entry-tools" }, undo));
  const right = h("div", { class: "side" }, warningsView(g), adviceView(g, requestAdvice));
  const main = h("div", { class: "main-col" }, g.done ? gameOverView(g) : null, entry, stripView(g, g.table),
    seatsView(g, g.table, g.true_hands));
  if (g.done && undo) main.append(h("div", { class: "entry-tools" }, undo));
  return h("div", { class: "game" }, h("div", { class: "cols" }, main, right), tools, log);
}

// ------------------------------------------------------------------ entering
function choose(c) {
  const entry = JSON.parse(JSON.stringify(c.entry));
  if (c.asks.length) { S.pending = { entry, asks: c.asks, idx: 0, fixes: S.fixing }; render(); return; }
  submit(entry, S.fixing);
}

function answer(value) {
  const p = S.pending, ask = p.asks[p.idx];
  if (ask.field === "bluff_caught") p.entry.bluff_caught = value;
  else if (ask.field === "reveals") (p.entry.reveals = p.entry.reveals || []).push(ask.seat === null || ask.seat === undefined ? value : { seat: ask.seat, role: value });
  else if (ask.field === "redraw") p.entry.redraw = value;
  else if (ask.field === "drawn") (p.entry.drawn = p.entry.drawn || []).push(value);
  p.idx += 1;
  if (p.idx < p.asks.length) { render(); return; }
  S.pending = null;
  submit(p.entry, p.fixes);
}

async function submit(entry, fixes) {
  const t0 = performance.now();
  try {
    const body = { entry };
    if (fixes) body.fixes = fixes;
    const res = await api("POST", withParams(`/api/games/${S.game.id}/entries`, searchParam()), body);
    S.game = res.game;
    const o = res.outcome;
    if (o.status === "need") { S.pending = { entry: o.entry, asks: o.asks, idx: 0, fixes: o.fixes }; }
    else if (o.status === "accepted") { S.fixing = null; }
    else if (o.status === "warning") { S.fixing = null; }
  } catch (e) { toast(e.message); }
  render(t0);
}

function correct(w) {
  const key = w.field ? w.field.replace(/\[.*$/, "") : null;
  if (["reveals", "bluff_caught", "redraw", "drawn"].includes(key)) {
    const entry = JSON.parse(JSON.stringify(w.entry));
    delete entry[key];
    if (key === "bluff_caught") delete entry.reveals;
    submit(entry, w.id);
  } else {
    S.fixing = w.id;
    render();
  }
}

async function dismiss(w) {
  try { S.game = await api("POST", withParams(`/api/games/${S.game.id}/warnings/${w.id}/dismiss`, searchParam())); } catch (e) { toast(e.message); }
  S.fixing = null; render();
}

async function undoLast() {
  const t0 = performance.now();
  try { S.game = await api("POST", withParams(`/api/games/${S.game.id}/undo`, searchParam())); } catch (e) { toast(e.message); }
  S.pending = null; render(t0);
}

async function act(action) {
  const t0 = performance.now();
  try { S.game = await api("POST", withParams(`/api/games/${S.game.id}/act`, searchParam()), { action }); } catch (e) { toast(e.message); }
  render(t0);
}

async function requestAdvice() {
  const t0 = performance.now();
  try { S.game = await api("GET", withParams(`/api/games/${S.game.id}`, searchParam(), "advice=1")); } catch (e) { toast(e.message); }
  render(t0);
}

// ------------------------------------------------------------------ replay
async function loadReplay(id, step, seat) {
  const q = [`step=${step}`, seat === null || seat === undefined ? "" : `seat=${seat}`, searchParam()];
  const r = await api("GET", withParams(`/api/games/${id}/replay`, ...q));
  if (r.log) S.replayLog = r.log; else if (!S.replay || S.replay.id !== id) S.replayLog = null;
  S.replay = r;
}

async function stepTo(step, seat) {
  const r = S.replay;
  if (step < 0 || step > r.last_step) return;
  try { await loadReplay(r.id, step, seat === undefined ? r.seat : seat); history.replaceState(null, "", `#/replay/${r.id}/${step}`); } catch (e) { toast(e.message); }
  render();
}

function replayScreen() {
  const r = S.replay;
  $("#title").textContent = "Replay";
  if (!r.steps) return h("div", { class: "card" }, h("p", {}, "This file has no valid steps."), r.error ? h("p", { class: "rule" }, r.error) : null);
  const seatSel = h("select", { id: "replay-seat", onchange: (e) => stepTo(r.step, +e.target.value) },
    r.seats.map((s) => h("option", { value: s, selected: s === r.seat }, `${r.names[s] === "You" ? "Your" : r.names[s] + "'s"} view`)));
  seatSel.setAttribute("aria-label", "Whose view");
  const slider = h("input", { type: "range", min: 0, max: r.last_step, value: r.step, id: "replay-slider", "aria-label": "Step", onchange: (e) => stepTo(+e.target.value) });
  const controls = h("div", { class: "tools replay-controls" },
    h("button", { id: "first", onclick: () => stepTo(0), "aria-label": "First step" }, "|◀"),
    h("button", { id: "back", onclick: () => stepTo(r.step - 1), disabled: r.step === 0, "aria-label": "Step back" }, "◀ Back"),
    h("span", { id: "step-label" }, `Step ${r.step} of ${r.last_step}`),
    h("button", { id: "forward", onclick: () => stepTo(r.step + 1), disabled: r.step === r.last_step, "aria-label": "Step forward" }, "Forward ▶"),
    h("button", { id: "last", onclick: () => stepTo(r.last_step), "aria-label": "Last step" }, "▶|"),
    slider, h("label", { class: "field-inline" }, "Seen by ", seatSel), beliefSwitch(),
    S.info.search ? searchSwitch(() => stepTo(r.step)) : null);
  const g = { ...r, hand: r.table.hand, drawn: r.table.drawn, kind: "replay", done: r.table.done, advice_for: r.advice_for };
  const next = h("p", { class: "card next", id: "replay-event" }, r.event_text ? [h("b", {}, "Next: "), r.event_text] : h("b", {}, r.table.done ? `Game over: ${r.names[r.table.winner]} won.` : "End of the file."));
  const head = h("p", { class: "hint" }, `${r.kind === "match" ? "A full match: true hands shown." : "A seat record: what " + (r.names[r.seat] === "You" ? "you" : r.names[r.seat]) + " knew."} Turn ${r.table.turn + 1}, ${r.table.done ? "over" : r.table.phase.replace("_", " ")}.`);
  return h("div", { class: "game replay" }, controls, r.error ? h("p", { class: "card rule" }, `The file stops being valid here: ${r.error}`) : null,
    head, h("div", { class: "cols" }, h("div", { class: "main-col" }, next, stripView(g, r.table), seatsView(g, r.table, r.true_hands)), h("div", { class: "side" }, adviceView(g))));
}

document.addEventListener("keydown", (e) => {
  if (S.screen !== "replay" || e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
  if (e.key === "ArrowRight") stepTo(S.replay.step + 1);
  if (e.key === "ArrowLeft") stepTo(S.replay.step - 1);
});

route();
