// The Qwinto page: a start form, the table (score sheets, dice or cards, the person's
// moves), the move log and the final scoring. It speaks the JSON API of qwinto_env.web;
// every game fact (rows, grid, pentagons, bots, player limits) comes from /api/options.
//
// Test hooks: data-testid on the controls, data-action on every legal move,
// document.body.dataset.step (the step of the state shown) and document.body.dataset.state:
// "idle" (the start form), "busy" (a request or the move animation runs), "ready" (waiting
// for the person), "done" (the game is over).
"use strict";

const EVENT_DELAY_MS = 300;
const $ = (id) => document.getElementById(id);
let options = null;   // GET /api/options
let game = null;      // the last game state shown
let shown = 0;        // events of `game` already in the log

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== "") node.textContent = text;
  return node;
}

function setPageState(state) { document.body.dataset.state = state; }
function say(text) { $("status").textContent = text; }

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

function detailText(body, status) {
  const detail = body && body.detail;
  if (Array.isArray(detail)) {  // FastAPI's schema errors: where and what
    return detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  }
  return detail ? String(detail) : `the server answered ${status}`;
}

// fetch JSON; throws Error(detail) with .status for a 4xx/5xx answer
async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error(detailText(data, response.status));
    error.status = response.status;
    throw error;
  }
  return data;
}

// -- the start form ------------------------------------------------------------------

function fillSelect(select, values, labelOf = String) {
  const before = select.value;
  select.replaceChildren(...values.map((v) => el("option", { value: String(v) }, labelOf(v))));
  if (values.map(String).includes(before)) select.value = before;
}

function range(lo, hi) { return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i); }

function playableCounts(name) {
  const { min_players: lo, max_players: hi } = options.games[name];
  return range(lo, hi).filter((n) => n === 1 || (options.bots[name][n] || []).length > 0);
}

function refreshForm() {
  const name = $("game-select").value;
  fillSelect($("players-select"), playableCounts(name));
  const n = Number($("players-select").value);
  fillSelect($("seat-select"), range(0, n - 1), (s) => `player ${s}`);
  const seat = Number($("seat-select").value);
  const bots = options.bots[name][n] || [];
  const rows = range(1, n - 1).map((k) => botSelect((seat + k) % n, bots));
  $("bot-selects").replaceChildren(...rows);
}

function botSelect(seat, bots) {
  const old = document.querySelector(`[data-testid="bot-select-${seat}"]`);
  const select = el("select", { "data-testid": `bot-select-${seat}`, "data-seat": String(seat) });
  fillSelect(select, bots);
  const preferred = bots.find((b) => b.startsWith("pretrained:"))
    || bots.find((b) => b === "expert");
  if (old && bots.includes(old.value)) select.value = old.value;
  else if (preferred) select.value = preferred;
  const label = el("label", {}, `Bot at player ${seat} `);
  label.append(select);
  return label;
}

function showSetup() {
  game = null;
  history.replaceState(null, "", location.pathname);
  $("table").hidden = true;
  $("setup").hidden = false;
  say("Choose a game and the bots, then press Start.");
  setPageState("idle");
}

async function startGame(event) {
  event.preventDefault();
  const body = {
    game: $("game-select").value,
    num_players: Number($("players-select").value),
    seat: Number($("seat-select").value),
    bots: [...document.querySelectorAll("#bot-selects select")].map((s) => s.value),
  };
  await request(() => api("POST", "/api/games",
    { ...body, seed: seedValue($("seed-input").value.trim()) }), true);
}

// the seed exactly as typed: a JavaScript number rounds whole numbers above 2**53, so a
// larger seed goes into the JSON as its digits, or is refused where the browser cannot
function seedValue(text) {
  if (text === "") return null;
  if (!/^[0-9]+$/.test(text)) throw new Error(`seed ${text}: type a whole number, 0 or more`);
  if (Number.isSafeInteger(Number(text))) return Number(text);
  if (typeof JSON.rawJSON === "function") return JSON.rawJSON(text.replace(/^0+/, ""));
  throw new Error(`seed ${text}: this browser sends seeds up to ${Number.MAX_SAFE_INTEGER}`);
}

// -- talking to the server -----------------------------------------------------------

// run one request with input disabled; a fresh game's log is drawn at once, a move's
// new events are animated
async function request(send, fresh) {
  if (document.body.dataset.state === "busy") return;
  setPageState("busy");
  setInputsDisabled(true);
  showError("");
  try {
    const state = await send();
    await show(state, fresh);
  } catch (error) {
    await recover(error);
  } finally {
    setInputsDisabled(false);
  }
}

async function recover(error) {
  showError(error.message);
  if (game && error.status === 409) {  // stale or busy: show the game as it is now
    try {
      await show(await api("GET", `/api/games/${game.id}`), false);
      return;
    } catch (ignored) { /* the game is gone too: keep what is on the page */ }
  }
  setPageState(game ? (game.done ? "done" : "ready") : "idle");
}

function setInputsDisabled(disabled) {
  for (const node of document.querySelectorAll("button, select, input")) {
    if (node.id !== "fast") node.disabled = disabled;
  }
}

async function loadGame(id) {
  try {
    await show(await api("GET", `/api/games/${encodeURIComponent(id)}`), true);
  } catch (error) {
    showSetup();
    showError(`Cannot resume game ${id}: ${error.message}`);
  }
}

function sendMove(action) {
  if (!game || document.body.dataset.state !== "ready") return;
  const body = { action, step: game.step };
  request(() => api("POST", `/api/games/${game.id}/move`, body), false);
}

// -- showing a state -----------------------------------------------------------------

async function show(state, fresh) {
  if (!game || game.id !== state.id || fresh) {
    shown = 0;
    $("log").replaceChildren();
  }
  game = state;
  document.body.dataset.step = String(state.step);
  history.replaceState(null, "", `${location.pathname}?game=${encodeURIComponent(state.id)}`);
  $("setup").hidden = true;
  $("table").hidden = false;
  await playEvents(state.events, fresh);
  draw(state);
  setPageState(state.done ? "done" : "ready");
}

function delay() {
  if ($("fast").checked || document.hidden) return Promise.resolve();
  return new Promise((resolve) => setTimeout(resolve, EVENT_DELAY_MS));
}

async function playEvents(events, atOnce) {
  for (; shown < events.length; shown++) {
    const e = events[shown];
    if (!atOnce) {
      say(`${e.who}: ${e.text}`);
      await delay();
    }
    const item = el("li", { class: e.seat === game.seat ? "mine" : "" });
    item.append(el("span", { class: "turn" }, `${e.turn + 1}`), el("b", {}, `${e.who}: `), e.text);
    $("log").append(item);
    // not scrollIntoView: that scrolls the whole page too
    $("log-panel").scrollTop = $("log-panel").scrollHeight;
  }
}

function draw(state) {
  drawSituation(state);
  drawRoll(state.roll);
  drawCards(state);
  drawMoves(state);
  drawSheets(state);
  drawFinal(state);
}

function drawSituation(state) {
  const active = state.active === state.seat ? "you are" : `player ${state.active} is`;
  const parts = [`${state.game === "dice" ? "Dice" : "Card"} game`, `turn ${state.turn + 1}`];
  if (!state.done) parts.push(`${active} active`, `phase: ${state.phase}`);
  if (state.value !== null) {
    parts.push(`write ${state.value} in ${state.colours.join(" or ") || "no row"}`);
  }
  $("situation").textContent = parts.join(" · ");
  if (state.done) say("The game is over.");
  else if (state.legal.length) say(`Your move (${state.legal.length} choices).`);
}

function drawRoll(roll) {
  $("roll").hidden = !roll;
  if (!roll) return;
  const dice = roll.dice.map((d) => el("span", {
    class: `die ${d.colour}`, "aria-label": `${d.colour} die showing ${d.face}`,
  }, String(d.face)));
  const sum = el("span", { class: "sum" }, `= ${roll.value}`);
  $("roll").replaceChildren(el("span", { class: "caption" }, "Roll"), ...dice, sum);
}

function cardNode(card, caption) {
  const label = caption ? `${caption}: ${card.card}` : card.card;
  const node = el("div", { class: `card ${card.colour}`, "aria-label": label });
  node.append(el("span", { class: "value" }, String(card.value)),
              el("span", { class: "colour-name" }, card.colour));
  if (caption) node.append(el("span", { class: "caption" }, caption));
  return node;
}

function drawCards(state) {
  $("stacks").hidden = $("hand").hidden = !state.stacks;
  if (!state.stacks) return;
  $("stacks").replaceChildren(el("span", { class: "caption" }, "Stacks"),
                              ...state.stacks.map((s) => cardNode(s, s.name)));
  $("hand").replaceChildren(el("span", { class: "caption" }, "Your hand"),
                            ...state.hand.map((c) => cardNode(c, "")));
}

function drawMoves(state) {
  const buttons = state.legal.filter((m) => m.cell === null).map((m) => {
    const button = el("button", { type: "button", class: `move ${m.kind}`, "data-kind": m.kind,
                                  "data-testid": "legal-move", "data-action": String(m.action) },
                      m.label);
    button.addEventListener("click", () => sendMove(m.action));
    return button;
  });
  const writes = state.legal.some((m) => m.cell !== null);
  const text = "Click a highlighted field on your sheet to write there.";
  const hint = writes ? [el("p", { class: "hint" }, text)] : [];
  $("moves").replaceChildren(...hint, ...buttons);
}

// -- the score sheets ----------------------------------------------------------------

// "you (player 0)" or "player 1 (expert)", as the move log names the seats
function whoIs(seat, state) {
  const name = state.players[seat].name;
  return seat === state.seat ? `you (player ${seat})` : `player ${seat} (${name})`;
}

function drawSheets(state) {
  const order = state.players.map((_, k) => state.players[(state.seat + k) % state.num_players]);
  const writable = new Map(state.legal.filter((m) => m.cell !== null).map((m) => [m.cell, m]));
  const none = new Map();
  $("sheets").replaceChildren(
    ...order.map((p) => sheetNode(p, p.seat === state.seat ? writable : none, state)));
}

function sheetNode(player, writable, state) {
  const mine = player.seat === state.seat;
  const title = whoIs(player.seat, state);
  const active = state.active === player.seat && !state.done;
  const node = el("section", { class: `sheet${mine ? " mine" : ""}${active ? " active" : ""}`,
                               "data-testid": `sheet-${player.seat}`,
                               "aria-label": `score sheet of ${title}` });
  const grid = el("div", { class: "grid" });
  options.layout.rows.forEach((row, r) => grid.append(...rowNodes(player, r, row, writable)));
  const score = el("span", { class: "score", "data-testid": `score-${player.seat}` },
                   `${player.score} points`);
  node.append(el("h3", {}, title), grid, misthrowNode(player), score);
  return node;
}

function rowNodes(player, r, row, writable) {
  const layout = options.layout;
  const nodes = [el("span", { class: `row-name ${row}`, style: `grid-row:${r + 1}` }, row)];
  const gap = el("span", { class: "gap", "aria-hidden": "true",
                           style: `grid-row:${r + 1};grid-column:${layout.gap_columns[r] + 2}` });
  nodes.push(gap);
  for (let f = 0; f < layout.fields; f++) {
    nodes.push(fieldNode(player, r, f, writable.get(r * layout.fields + f)));
  }
  return nodes;
}

function fieldNode(player, r, f, move) {
  const layout = options.layout;
  const cell = r * layout.fields + f;
  const row = layout.rows[r];
  const pentagon = layout.pentagons.includes(cell);
  const value = player.cells[cell];
  const label = `${row} field ${f + 1}${pentagon ? " (pentagon)" : ""}: ${value || "empty"}`;
  const attrs = { class: `field ${row}${pentagon ? " pentagon" : ""}${value ? " filled" : ""}`,
                  "aria-label": label,
                  style: `grid-row:${r + 1};grid-column:${layout.field_columns[r][f] + 2}`,
                  "data-cell": String(cell) };
  if (!move) return el("span", attrs, value ? String(value) : "");
  const button = el("button", { ...attrs, type: "button", class: `${attrs.class} writable`,
                                "data-testid": "legal-move", "data-action": String(move.action),
                                "data-kind": move.kind, title: move.label, "aria-label": move.label });
  button.textContent = String(game.value ?? "");
  button.addEventListener("click", () => sendMove(move.action));
  return button;
}

function misthrowNode(player) {
  const most = options.layout.max_misthrows;
  const boxes = el("span", { class: "misthrows",
                             "aria-label": `misthrows: ${player.misthrows} of ${most}` });
  boxes.append(el("span", { class: "caption" }, "misthrows"));
  for (let k = 0; k < most; k++) {
    const crossed = k < player.misthrows;
    boxes.append(el("span", { class: `box${crossed ? " crossed" : ""}` }, crossed ? "✕" : ""));
  }
  return boxes;
}

// -- the end -------------------------------------------------------------------------

function drawFinal(state) {
  $("final").hidden = !state.final;
  if (!state.final) return;
  const rows = options.layout.rows;
  const head = ["player", ...rows, ...range(1, 5).map((k) => `⬠${k}`), "misthrows", "total"];
  const table = $("final-table");
  const headRow = el("tr");
  headRow.append(...head.map((h) => el("th", { scope: "col" }, h)));
  table.replaceChildren(el("thead"), el("tbody"));
  table.tHead.append(headRow);
  for (const p of state.final.players) table.tBodies[0].append(finalRow(p, state));
  const names = state.final.winners.map((s) => whoIs(s, state));
  $("winners").textContent = `Winner${names.length > 1 ? "s" : ""}: ${names.join(", ")}`;
  $("record-link").href = `/api/games/${state.id}/record`;
}

function finalRow(p, state) {
  const tr = el("tr", { class: state.final.winners.includes(p.seat) ? "winner" : "" });
  tr.append(el("th", { scope: "row" }, whoIs(p.seat, state)),
            ...p.rows.map((v) => el("td", {}, String(v))),
            ...p.pentagons.map((v) => el("td", {}, v ? String(v) : "·")),
            el("td", {}, String(p.misthrows)),
            el("td", { "data-testid": `final-total-${p.seat}`, class: "total" }, String(p.total)));
  return tr;
}

// -- start ---------------------------------------------------------------------------

function gameIdInUrl() {
  return new URLSearchParams(location.search).get("game") || location.hash.slice(1) || null;
}

async function main() {
  setPageState("busy");
  try {
    options = await api("GET", "/api/options");
  } catch (error) {
    say("The server did not answer.");
    showError(error.message);
    return;
  }
  fillSelect($("game-select"), Object.keys(options.games), (g) => options.games[g].title);
  refreshForm();
  $("players-select").value = "2";  // a two-player game against a pretrained bot, if offered
  refreshForm();
  for (const id of ["game-select", "players-select", "seat-select"]) {
    $(id).addEventListener("change", refreshForm);
  }
  $("setup").addEventListener("submit", startGame);
  $("new-game").addEventListener("click", showSetup);
  $("fast").checked = localStorage.getItem("qwinto-fast") === "1";
  $("fast").addEventListener("change", () => {
    localStorage.setItem("qwinto-fast", $("fast").checked ? "1" : "0");
  });
  const id = gameIdInUrl();
  if (id) await loadGame(id);
  else showSetup();
}

main();
