// The memory explorer: every call goes through the public REST API with the key the person signed in
// with (kept in this tab's sessionStorage only), so the page shows nothing the key may not read. Text
// from the server is only ever put in the page as text (textContent), never as markup.

const KEY = "hippograph.key";
const USER = "hippograph.user";
const main = document.getElementById("main");
const state = { me: null, user: sessionStorage.getItem(USER) || "" };

// --- the API ---------------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                                  credentials: "omit", cache: "no-store" });
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

const q = encodeURIComponent;
const userPath = (rest = "") => `/v1/users/${q(state.user)}${rest}`;
const canWrite = () => Boolean(state.me && state.me.scopes.includes("write"));

// --- building the page ---------------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...nodes) {
  main.replaceChildren(...nodes);
}

function errorBox(err) {
  return el("p", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err));
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

// --- signing in ------------------------------------------------------------------------------------------
async function signIn() {
  try {
    state.me = await api("GET", "/v1/me");
  } catch (err) {
    if (err.status === 401) return signInForm(sessionStorage.getItem(KEY) ? err : null);
    throw err;
  }
  renderWho();
  return true;
}

function signInForm(err) {
  const input = el("input", { type: "password", id: "key", placeholder: "hg_…", autocomplete: "off" });
  const form = el("form", { class: "card signin", id: "signin" },
    el("h2", {}, "Sign in"),
    el("p", { class: "muted" }, "This server needs an API key. It is kept in this browser tab only, and sent to this server alone."),
    input, err ? errorBox(err) : null,
    el("button", { class: "primary", type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, input.value.trim());
    if (await signIn()) route();
  });
  document.getElementById("nav").hidden = true;
  show(form);
  return false;
}

function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
  state.me = null;
  state.user = "";
  document.getElementById("who").replaceChildren();
  signIn().then((ok) => ok && route());
}

function renderWho() {
  const me = state.me;
  const list = el("datalist", { id: "users" });
  const picker = el("input", { id: "user", list: "users", placeholder: "user id", value: state.user, size: 16 });
  const pick = () => {
    if (picker.value.trim() === state.user) return;  // a change event on leaving the field, nothing new
    state.user = picker.value.trim();
    sessionStorage.setItem(USER, state.user);
    route();
  };
  picker.addEventListener("change", pick);
  api("GET", "/v1/users?limit=1000").then((r) => {
    list.replaceChildren(...r.users.map((u) => el("option", { value: u })));
    if (!state.user && r.users.length) { picker.value = r.users[0]; pick(); }
  }).catch(() => {});
  const mode = me.auth === "open" ? "open server, no key needed" : `tenant ${me.tenant} · ${me.scopes.join(", ")}`;
  document.getElementById("who").replaceChildren(...[
    el("label", { for: "user" }, "User"), picker, list, el("span", { id: "mode" }, mode),
    me.key_id ? el("button", { id: "signout", onclick: signOut }, "Sign out") : null].filter(Boolean));
  document.getElementById("nav").hidden = false;
}

// --- profile -------------------------------------------------------------------------------------------------
const KINDS = [["facts", "fact", "Facts"], ["preferences", "pref", "Preferences"], ["decisions", "decision", "Decisions"]];

async function profileView(show) {
  const data = await api("GET", userPath("/profile?history=true"));
  const notes = KINDS.flatMap(([list, field, title]) => data[list].map((n) => ({ ...n, text: n[field], title })));
  const byId = new Map(notes.map((n) => [n.id, n]));
  const replaced = new Map();  // id -> the notes it replaced
  for (const n of notes) {
    if (n.superseded_by) replaced.set(n.superseded_by, [...(replaced.get(n.superseded_by) || []), n]);
  }
  const current = notes.filter((n) => n.current && !n.candidate);
  const unsure = notes.filter((n) => n.current && n.candidate);
  const sections = KINDS.map(([, , title]) => {
    const items = current.filter((n) => n.title === title);
    return el("section", { "data-kind": title.toLowerCase() }, el("h3", {}, title),
      items.length ? items.map((n) => noteCard(n, replaced, byId)) : el("p", { class: "muted" }, "None."));
  });
  show(el("h2", {}, `How I remember ${state.user}`), ...sections,
    el("section", { id: "unsure" }, el("h3", {}, "Not sure yet"),
      unsure.length ? unsure.map((n) => noteCard(n, replaced, byId, true))
        : el("p", { class: "muted" }, "Nothing the server is unsure of.")));
}

function noteCard(n, replaced, byId, unsure = false) {
  const card = el("div", { class: unsure ? "card note unsure" : "card note", "data-id": n.id });
  const history = el("div", { class: "history", hidden: true });
  const sources = el("div", { class: "sources" });
  const chain = [];
  for (let older = replaced.get(n.id) || []; older.length; older = older.flatMap((o) => replaced.get(o.id) || [])) {
    chain.push(...older);
  }
  const tools = [];
  if (canWrite()) {
    if (unsure) tools.push(el("button", { class: "confirm", onclick: () => correct(n, n.text) }, "Confirm"));
    tools.push(el("button", { class: "edit", onclick: () => editNote(card, n) }, "Correct"));
    tools.push(el("button", { class: "delete danger", onclick: () => deleteNote(n, unsure) }, unsure ? "Dismiss" : "Delete"));
  }
  card.append(
    el("div", { class: "row" }, el("span", { class: "text grow" }, n.text), ...tools),
    el("div", { class: "muted small" },
      `said ${when(n.valid_at)} · confidence ${Number(n.confidence).toFixed(2)}`, n.slot ? ` · ${n.slot}` : "",
      " · from ", ...n.source.flatMap((id, i) => [i ? ", " : "",
        el("button", { class: "link source-link", onclick: () => toggleSource(sources, id) }, id)]),
      " · ", el("button", { class: "link history-link", onclick: () => toggleHistory(history, n, chain) },
        chain.length ? `history (${chain.length} replaced)` : "history")),
    sources, history);
  return card;
}

async function toggleSource(box, id) {
  const open = box.querySelector(`[data-source="${CSS.escape(id)}"]`);
  if (open) return open.remove();
  try {
    const mem = await api("GET", userPath(`/memories/${q(id)}`));
    box.append(el("div", { class: "source", "data-source": id },
      mem.parts.map((p) => el("div", {}, el("span", { class: "muted small" }, `${p.role || p.kind} · ${when(p.timestamp)} · `),
        el("span", { class: "source-text" }, p.content)))));
  } catch (err) {
    box.append(el("div", { class: "source", "data-source": id }, errorBox(err)));
  }
}

async function toggleHistory(box, n, chain) {
  if (!box.hidden) { box.hidden = true; return; }
  box.hidden = false;
  box.replaceChildren(el("p", { class: "muted small" }, "Loading…"));
  try {
    const audit = await api("GET", userPath(`/audit?item_id=${q(n.id)}`));
    box.replaceChildren(
      chain.length ? el("div", {}, el("strong", {}, "Replaced: "),
        chain.map((o) => el("div", { class: "replaced" }, `“${o.text}” (${when(o.valid_at)} – ${when(o.invalid_at)})`))) : null,
      el("div", { class: "audit-events" }, audit.events.map((e) => el("div", { class: "small audit-event" },
        `${when(e.at)} · ${e.action} by ${e.actor}`, e.text ? ` · “${e.text}”` : ""))));
  } catch (err) {
    box.replaceChildren(errorBox(err));
  }
}

function editNote(card, n) {
  const text = el("textarea", { class: "correction" });
  text.value = n.text;
  const form = el("form", { class: "edit-form" }, text,
    el("div", { class: "row" }, el("button", { class: "primary", type: "submit" }, "Save correction"),
      el("button", { type: "button", onclick: () => form.remove() }, "Cancel")));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); correct(n, text.value, form); });
  card.append(form);
  text.focus();
}

async function correct(n, text, form) {
  try {
    await api("PATCH", userPath(`/profile/${q(n.id)}`), { text, actor: "memory explorer" });
    route();
  } catch (err) {
    (form || main.firstElementChild || main).append(errorBox(err));
  }
}

async function deleteNote(n, unsure) {
  if (!unsure && !confirm(`Delete “${n.text}”? Its text leaves every store.`)) return;
  try {
    await api("DELETE", userPath(`/profile/${q(n.id)}?actor=${q("memory explorer")}`));
    route();
  } catch (err) {
    (main.firstElementChild || main).append(errorBox(err));
  }
}

// --- graph ---------------------------------------------------------------------------------------------------
const MAX_NEW = 150;  // new nodes one expansion draws
async function graphView(show) {
  const search = el("input", { id: "entity-search", placeholder: "find an entity", size: 24 });
  const list = el("div", { id: "entity-list" });
  const side = el("div", { id: "graph-side" }, el("p", { class: "muted" }, "Click a node to expand it, an arrow to read what it came from."));
  const types = el("select", { id: "type-filter" }, el("option", { value: "" }, "every relation type"));
  const old = el("input", { type: "checkbox", id: "show-old" });
  const box = el("div", { id: "cy" });
  show(el("h2", {}, `${state.user}'s graph`),
    el("div", { class: "row" }, search, types, el("label", {}, old, " superseded relations too")),
    list, el("div", { class: "graph-wrap" }, box, side));
  if (typeof cytoscape !== "function") { box.append(errorBox("the graph library did not load")); return; }
  const cy = cytoscape({
    container: box, minZoom: 0.1, maxZoom: 4,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "background-color": "#7b93d6", width: 22, height: 22 } },
      { selector: "node[?user]", style: { "background-color": "#2f5bd3", width: 30, height: 30 } },
      { selector: "edge", style: { label: "data(label)", "font-size": 9, "curve-style": "bezier", "target-arrow-shape": "triangle",
                                   width: 1.5, "line-color": "#9aa5b8", "target-arrow-color": "#9aa5b8", "text-rotation": "autorotate" } },
      { selector: "edge[?old]", style: { "line-style": "dashed", opacity: 0.5 } },
      { selector: ".hidden", style: { display: "none" } },
    ],
  });
  window.hippographGraph = cy;  // for the page's own tests and for people poking at it in the console
  const predicates = new Set();
  const filter = () => {
    cy.edges().forEach((e) => {
      const hide = (types.value && e.data("label") !== types.value) || (e.data("old") && !old.checked);
      e.toggleClass("hidden", Boolean(hide));
    });
  };
  types.addEventListener("change", filter);
  old.addEventListener("change", filter);

  const expand = async (id) => {
    // with the relations that no longer hold: the checkbox below shows or hides them
    const sub = await api("GET", `/v1/graph/entities/${q(id)}/neighbors?user_id=${q(state.user)}&depth=1&history=true`);
    const added = [];
    // a neighbourhood at a time, and at most MAX_NEW new nodes of it: a user who has thousands of
    // neighbours stays drawable, the rest are found by name and drawn from there
    const fresh = sub.entities.filter((e) => cy.getElementById(e.id).empty());
    for (const e of fresh.slice(0, MAX_NEW)) {
      added.push({ group: "nodes", data: { id: e.id, label: e.is_user ? `${e.name} (user)` : e.name, type: e.type, user: e.is_user } });
    }
    const drawn = new Set([...cy.nodes().map((n) => n.id()), ...added.map((a) => a.data.id)]);
    if (fresh.length > MAX_NEW) {
      side.append(el("p", { class: "muted small", id: "not-drawn" },
        `${fresh.length - MAX_NEW} more neighbours are not drawn: find one by name above to start from it.`));
    }
    for (const r of sub.relations) {
      if (cy.getElementById(r.id).empty() && drawn.has(r.source_id) && drawn.has(r.target_id)) {
        added.push({ group: "edges", data: { id: r.id, source: r.source_id, target: r.target_id, label: r.predicate, old: Boolean(r.invalid_at), relation: r } });
      }
      predicates.add(r.predicate);
    }
    cy.add(added);
    cy.getElementById(id).data("expanded", true);
    types.replaceChildren(el("option", { value: "" }, "every relation type"), ...[...predicates].sort().map((p) => el("option", { value: p }, p)));
    filter();
    cy.layout({ name: "cose", animate: false, fit: true, padding: 30 }).run();
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }  // a few nodes: keep labels at their size
    return added.length;
  };

  cy.on("tap", "node", async (ev) => {
    const node = ev.target;
    side.replaceChildren(el("h3", {}, node.data("label")), el("p", { class: "muted" }, node.data("type")));
    try { await expand(node.id()); } catch (err) { side.append(errorBox(err)); }
  });
  cy.on("tap", "edge", (ev) => {
    const r = ev.target.data("relation");
    const sources = el("div", { class: "sources" });
    side.replaceChildren(el("h3", { class: "relation-title" }, `${cy.getElementById(r.source_id).data("label")} → ${r.predicate} → ${cy.getElementById(r.target_id).data("label")}`),
      el("p", { class: "relation-fact" }, r.fact),
      el("p", { class: "muted small" }, `valid ${when(r.valid_at)}`, r.invalid_at ? ` – ${when(r.invalid_at)} (superseded)` : " (current)"),
      el("p", { class: "small" }, "Said in: ", ...r.source_episode_ids.flatMap((id, i) => [i ? ", " : "",
        el("button", { class: "link source-link", onclick: () => toggleSource(sources, id) }, id)])), sources);
  });

  const find = async () => {
    const found = await api("GET", `/v1/graph/entities?user_id=${q(state.user)}&limit=50${search.value ? `&q=${q(search.value)}` : ""}`);
    list.replaceChildren(el("div", { class: "row small" }, found.length ? "Start from: " : "No entity matches.",
      ...found.map((e) => el("button", { class: "link entity", "data-id": e.id, onclick: async () => { cy.elements().remove(); await expand(e.id); } },
        e.is_user ? `${e.name} (user)` : e.name))));
    return found;
  };
  search.addEventListener("change", find);
  const found = await find();
  const start = found.find((e) => e.is_user) || found[0];
  if (start) await expand(start.id);
}

// --- ask -----------------------------------------------------------------------------------------------------
async function askView(show) {
  const query = el("input", { id: "question", class: "grow", placeholder: "a question, as the agent would get it" });
  const session = el("input", { id: "session", placeholder: "session id (optional)", size: 18 });
  const budget = el("input", { id: "budget", type: "number", min: 50, max: 100000, value: 1000, size: 7 });
  const out = el("div", { id: "answer" });
  const form = el("form", { class: "row" }, query, session, budget, el("button", { class: "primary", type: "submit" }, "Ask"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.replaceChildren(el("p", { class: "muted" }, "Asking…"));
    try {
      const body = { user_id: state.user, query: query.value, token_budget: Number(budget.value) };
      if (session.value.trim()) body.session_id = session.value.trim();
      const ctx = await api("POST", "/v1/context", body);
      const rows = Object.entries(ctx.sections).flatMap(([section, items]) => items.map((it) => el("tr", { class: "item" },
        el("td", {}, section), el("td", { class: "item-text" }, it.text), el("td", { class: "via" }, (it.via || []).join(", ")),
        el("td", {}, it.score === null || it.score === undefined ? "" : Number(it.score).toFixed(3)),
        el("td", { class: "small" }, (it.provenance || []).join(", ")))));
      out.replaceChildren(
        el("p", { id: "plan" }, el("span", { class: "tag" }, ctx.plan.name), ctx.plan.reason),
        el("p", { id: "tokens", class: "muted" }, `${ctx.tokens} of ${ctx.token_budget} tokens used`),
        el("h3", {}, "Why each item is here"),
        el("table", {}, el("thead", {}, el("tr", {}, ["section", "item", "route", "score", "from"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
        el("h3", {}, "The block the agent gets"), el("pre", { class: "block", id: "block" }, ctx.context));
    } catch (err) {
      out.replaceChildren(errorBox(err));
    }
  });
  show(el("h2", {}, `Ask as the agent would, for ${state.user}`), form, out);
  query.focus();
}

// --- sessions and audit --------------------------------------------------------------------------------------
async function sessionsView(show) {
  const data = await api("GET", userPath("/sessions"));
  const detail = el("div", { id: "session-detail" });
  const open = async (id) => {
    detail.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    try {
      const ctx = await api("POST", "/v1/context", { user_id: state.user, session_id: id, query: "What was said in this session?", token_budget: 2000 });
      const part = (name, title) => (ctx.sections[name] || []).length
        ? [el("h3", {}, title), ...(ctx.sections[name]).map((it) => el("div", { class: "card small window-item" }, it.text))] : [];
      detail.replaceChildren(el("h3", {}, `Session ${id}`), ...part("summary", "Summary"), ...part("pinned", "Pinned start"),
        ...part("recent", "Recent messages"), ...part("tools", "Tool calls"));
    } catch (err) {
      detail.replaceChildren(errorBox(err));
    }
  };
  show(el("h2", {}, `${state.user}'s sessions`),
    data.sessions.length ? el("table", { id: "sessions" }, el("thead", {}, el("tr", {}, ["session", "started", "last active", "expires"].map((h) => el("th", {}, h)))),
      el("tbody", {}, data.sessions.map((s) => el("tr", {},
        el("td", {}, el("button", { class: "link", onclick: () => open(s.session_id) }, s.session_id)),
        el("td", {}, when(s.started_at)), el("td", {}, when(s.last_active_at)), el("td", {}, when(s.expires_at))))))
      : el("p", { class: "muted" }, "No live sessions."), detail);
}

async function auditView(show) {
  const kind = el("select", { id: "audit-kind" }, el("option", { value: "" }, "notes and memories"),
    el("option", { value: "note" }, "notes"), el("option", { value: "memory" }, "memories"));
  const text = el("input", { id: "audit-filter", placeholder: "filter by action, actor or text" });
  const body = el("tbody", {});
  let events = [];
  const draw = () => {
    const f = text.value.toLowerCase();
    body.replaceChildren(...events.filter((e) => !f || [e.action, e.actor, e.text || "", e.item_id].join(" ").toLowerCase().includes(f))
      .map((e) => el("tr", { class: "audit-row" }, el("td", {}, when(e.at)), el("td", {}, e.action), el("td", {}, e.item_kind),
        el("td", { class: "audit-text" }, e.text || el("span", { class: "muted" }, "—")), el("td", {}, e.actor))));
  };
  const load = async () => {
    events = (await api("GET", userPath(`/audit?limit=10000${kind.value ? `&kind=${kind.value}` : ""}`))).events.reverse();
    draw();
  };
  kind.addEventListener("change", load);
  text.addEventListener("input", draw);
  show(el("h2", {}, `What changed in ${state.user}'s memory`), el("div", { class: "row" }, kind, text),
    el("table", { id: "audit" }, el("thead", {}, el("tr", {}, ["when", "action", "kind", "text", "by"].map((h) => el("th", {}, h)))), body));
  await load();
}

// --- routing -------------------------------------------------------------------------------------------------
const VIEWS = { profile: profileView, graph: graphView, ask: askView, sessions: sessionsView, audit: auditView };

async function route() {
  if (!state.me) return;
  const name = (location.hash.match(/^#\/(\w+)/) || [])[1] || "profile";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === name);
  if (!state.user) { show(el("p", { class: "muted" }, "Pick a user id above: nothing is stored for this tenant yet, or no user is chosen.")); return; }
  // each view draws into a box of its own: when another route starts before this one's answers came,
  // this one draws into a box that is no longer on the page
  const box = el("div", { class: "view", "data-view": name, "aria-busy": "true" });
  main.replaceChildren(box);
  const draw = (...nodes) => box.replaceChildren(...nodes);
  try {
    await (VIEWS[name] || profileView)(draw);
  } catch (err) {
    if (err.status === 401) { signInForm(err); return; }
    draw(errorBox(err));
  } finally {
    box.removeAttribute("aria-busy");
  }
}

window.addEventListener("hashchange", route);
signIn().then((ok) => ok && route()).catch((err) => show(errorBox(err)));
