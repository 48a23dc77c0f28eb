/* mcp-hooks dashboard: fetches the JSON endpoints and writes every value as text
   (textContent, never as markup), so a value from the log can never become markup. */
"use strict";
(function () {
  const main = document.getElementById("main");
  const status = document.getElementById("status");
  const page = document.body.dataset.page;
  const POLL_MS = 500;
  const PENDING_POLL_MS = 2000;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    return node;
  }
  async function getJSON(path) {
    const answer = await fetch(path, {credentials: "same-origin", cache: "no-store"});
    const data = await answer.json();
    if (!answer.ok) throw new Error(data.error || answer.statusText);
    return data;
  }
  function say(text, bad) {
    status.textContent = text;
    status.className = bad ? "problem" : "";
  }
  function table(columns, rows, rowOf) {
    const head = el("tr");
    for (const c of columns) head.append(el("th", {text: c}));
    const body = el("tbody");
    for (const r of rows) body.append(rowOf(r));
    return el("table", {}, el("thead", {}, head), body);
  }
  function cell(text, cls) {
    return el("td", cls ? {text: text == null ? "" : String(text), class: cls}
                        : {text: text == null ? "" : String(text)});
  }
  function sessionLink(id) {
    const td = el("td");
    if (id) td.append(el("a", {text: id, class: "session",
                               href: "sessions?id=" + encodeURIComponent(id)}));
    return td;
  }

  /* Activity ----------------------------------------------------------------------- */
  const FILTERS = ["session", "hook", "decision", "door", "since", "until"];
  function activityRow(e) {
    const tr = el("tr");
    tr.append(cell(e.ts), sessionLink(e.session), cell(e.door), cell(e.replica),
              cell(e.event), cell(e.tool), cell(e.decision, e.decision),
              cell(e.blocked_by), cell(e.reason, "reason"), cell(e.tool_input, "input"),
              cell(e.duration_ms + " ms"));
    return tr;
  }
  async function activity() {
    const query = new URLSearchParams(location.search);
    const form = el("form", {class: "filters", method: "get"});
    for (const name of FILTERS) {
      let input;
      if (name === "decision") {
        input = el("select", {name: name, "aria-label": name});
        for (const v of ["", "allow", "deny", "ask"]) {
          input.append(el("option", {value: v, text: v || "any decision"}));
        }
      } else {
        input = el("input", {name: name, placeholder: name, "aria-label": name});
      }
      input.value = query.get(name) || "";
      form.append(input);
    }
    form.append(el("button", {type: "submit", text: "Filter"}));
    const wanted = new URLSearchParams();
    for (const name of FILTERS) if (query.get(name)) wanted.set(name, query.get(name));
    main.append(form);
    const data = await getJSON("api/events?" + wanted.toString());
    const rows = data.events.slice().reverse();
    const t = table(["time", "session", "door", "replica", "event", "tool", "decision",
                     "blocked by", "reason", "tool input", "duration"], rows, activityRow);
    t.id = "activity";
    main.append(t);
    const body = t.querySelector("tbody");
    let cursor = data.cursor;
    say(data.store + " · live");
    setInterval(async function () {
      try {
        const q = new URLSearchParams(wanted);
        q.set("after", cursor);
        const fresh = await getJSON("api/events?" + q.toString());
        cursor = fresh.cursor;
        for (const e of fresh.events) {
          const tr = activityRow(e);
          tr.className = "new";
          body.prepend(tr);
        }
        say(fresh.store + " · live");
      } catch (err) { say(String(err.message), true); }
    }, POLL_MS);
  }

  /* Hooks --------------------------------------------------------------------------- */
  const COLORS = {allow: "#067647", deny: "#b42318", ask: "#b54708"};
  function chart(data) {
    const width = 720, height = 160, pad = 24;
    const box = svg("svg", {class: "chart", width: width, height: height,
                            viewBox: "0 0 " + width + " " + height, role: "img"});
    const series = Object.entries(data.series);
    let top = 1;
    for (const [, counts] of series) for (const c of counts) top = Math.max(top, c);
    for (const [name, counts] of series) {
      const step = (width - 2 * pad) / Math.max(1, counts.length - 1);
      const points = counts.map((c, i) => (pad + i * step).toFixed(1) + "," +
        (height - pad - (c / top) * (height - 2 * pad)).toFixed(1));
      box.append(svg("polyline", {points: points.join(" "), fill: "none", "stroke-width": 2,
                                  stroke: COLORS[name] || "#6b6b76"}));
    }
    const caption = el("p", {class: "muted", text: "decisions from " + (data.start || "-") +
      " to " + (data.end || "-") + ": " + series.map(([n, c]) =>
        n + " " + c.reduce((a, b) => a + b, 0)).join(", ")});
    return el("section", {}, box, caption);
  }
  async function hooks() {
    const query = new URLSearchParams(location.search);
    const span = query.get("window") || "24h";
    const form = el("form", {class: "filters", method: "get"});
    const pick = el("select", {name: "window", "aria-label": "window"});
    for (const w of ["15m", "1h", "6h", "24h", "7d", "all"]) {
      pick.append(el("option", {value: w, text: "last " + w}));
    }
    pick.value = span;
    form.append(pick, el("button", {type: "submit", text: "Show"}));
    main.append(form);
    const data = await getJSON("api/hooks?window=" + encodeURIComponent(span));
    main.append(chart(data.chart));
    main.append(table(["hook", "root", "scope", "trusted", "mode", "error", "runs", "denies",
                       "asks", "failures", "timeouts", "p50", "p95"], data.hooks, function (h) {
      const tr = el("tr");
      tr.append(cell(h.name), cell(h.root), cell(h.scope), cell(h.trusted ? "yes" : "no"),
                cell(h.mode), cell(h.error, "problem"), cell(h.runs), cell(h.denies),
                cell(h.asks), cell(h.failures), cell(h.timeouts),
                cell(h.p50_ms == null ? "" : h.p50_ms + " ms"),
                cell(h.p95_ms == null ? "" : h.p95_ms + " ms"));
      return tr;
    }));
    say(data.events + " events counted");
  }

  /* Sessions ------------------------------------------------------------------------ */
  async function sessions() {
    const id = new URLSearchParams(location.search).get("id") || "";
    const form = el("form", {class: "filters", method: "get"});
    const input = el("input", {name: "id", placeholder: "session id", "aria-label": "id"});
    input.value = id;
    form.append(input, el("button", {type: "submit", text: "Open"}));
    main.append(form);
    if (!id) { say("name a session, or open one from Activity"); return; }
    const data = await getJSON("api/session?id=" + encodeURIComponent(id));
    main.append(el("h2", {text: "Session " + data.session}));
    main.append(table(["time", "what", "decision / action", "by", "detail"], data.timeline,
      function (i) {
        const tr = el("tr");
        if (i.kind === "event") {
          const detail = el("td", {class: "reason"});
          detail.append(el("div", {text: i.reason || i.hooks.map(h => h.name + ":" +
                                                                h.status).join(" ")}));
          if (i.rewrite) {
            detail.append(el("div", {class: "input before", text: "before: " + i.before}),
                          el("div", {class: "input after", text: "after: " + i.after}));
          }
          tr.append(cell(i.ts), cell(i.event + (i.tool ? " " + i.tool : "") +
                    (i.rewrite ? " (input rewritten)" : "") +
                    (i.stop_round ? " · stop gate, round " + i.stop_round : "")),
                    cell(i.decision, i.decision), cell(i.blocked_by), detail);
        } else if (i.kind === "ask") {
          tr.className = "ask-item";
          tr.append(cell(i.ts), cell("ask " + i.id + ": " + i.what),
                    cell(i.what === "approved" ? "allow" : i.what === "refused" ? "deny" : "ask",
                         i.what === "approved" ? "allow" : i.what === "refused" ? "deny" : "ask"),
                    cell(i.by ? i.by + (i.channel ? " (" + i.channel + ")" : "") : i.hook),
                    cell(i.detail, "reason"));
        } else if (i.kind === "signal") {
          tr.append(cell(i.ts), cell(i.intensity + " signal " + i.id), cell("waiting"),
                    cell(i.source), cell(i.reason, "reason"));
        } else {
          tr.append(cell(i.ts), cell("answer to " + i.id), cell(i.action), cell(""),
                    cell(i.details, "reason"));
        }
        return tr;
      }));
    say(data.timeline.length + " items");
  }

  /* Pending ------------------------------------------------------------------------- */
  function age(seconds) {
    if (seconds < 120) return Math.round(seconds) + "s";
    if (seconds < 7200) return Math.round(seconds / 60) + "m";
    return (seconds / 3600).toFixed(1) + "h";
  }
  async function answerAsk(id, verb, body) {
    /* The header and the JSON body are what another site's form cannot send (answers.py). */
    const answer = await fetch("api/asks/" + encodeURIComponent(id) + "/" + verb, {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: {"Content-Type": "application/json", "X-MCP-Hooks-Answer": "1"},
      body: JSON.stringify(body)});
    const data = await answer.json();
    if (!answer.ok) throw new Error(data.error || answer.statusText);
    return data;
  }
  function askRow(a, refresh, canAnswer) {
    const tr = el("tr", {"data-ask": a.id});
    if (!canAnswer) {
      tr.append(cell(age(a.age_seconds)), sessionLink(a.session), cell(a.tool),
                cell(a.tool_input, "input"), cell(a.hook), cell(a.reason, "reason"),
                cell(age(a.expires_in_seconds)), cell(a.id),
                cell("mcp-hooks approve " + a.id, "input"));
      return tr;
    }
    const reason = el("input", {placeholder: "reason (to refuse)", "aria-label": "reason",
                                class: "refusal"});
    const buttons = el("td", {class: "answer"});
    function act(label, verb, extra) {
      const button = el("button", {type: "button", text: label, class: verb});
      button.addEventListener("click", async function () {
        const by = document.getElementById("by").value.trim();
        const body = Object.assign({by: by}, extra());
        if (verb === "refuse" && !body.reason) { say("say why you refuse", true); return; }
        for (const b of buttons.querySelectorAll("button")) b.disabled = true;
        try {
          const done = await answerAsk(a.id, verb, body);
          say((done.approved ? "approved " + done.approved : "refused " + done.refused) +
              (done.for_session ? " for the session" : ""));
        } catch (err) { say(String(err.message), true); }
        refresh();
      });
      return button;
    }
    buttons.append(act("Approve", "approve", () => ({})),
                   act("Approve for session", "approve", () => ({for_session: true})),
                   reason, act("Refuse", "refuse", () => ({reason: reason.value.trim()})));
    tr.append(cell(age(a.age_seconds)), sessionLink(a.session), cell(a.tool),
              cell(a.tool_input, "input"), cell(a.hook), cell(a.reason, "reason"),
              cell(age(a.expires_in_seconds)), cell(a.id), buttons);
    return tr;
  }
  async function pending() {
    const who = el("input", {id: "by", placeholder: "your name", "aria-label": "your name"});
    who.value = localStorage.getItem("mcp-hooks-by") || "";
    who.addEventListener("change", () => localStorage.setItem("mcp-hooks-by", who.value));
    const asksBox = el("section", {id: "asks"});
    const signalsBox = el("section", {id: "signals"});
    main.append(el("p", {class: "filters"}, el("span", {text: "Answering as "}), who),
                asksBox, signalsBox);
    async function refresh() {
      const data = await getJSON("api/pending");
      asksBox.replaceChildren(...[el("h2", {text: "Calls waiting for your approval"}),
        data.asks.length ? table(["waiting", "session", "tool", "arguments", "hook", "reason",
                                  "expires in", "id", "answer"], data.asks,
                                 (a) => askRow(a, refresh, data.can_answer))
                         : el("p", {class: "muted", text: "No call waits for approval."}),
        data.can_answer ? null : el("p", {class: "warning", id: "cannot-answer",
                                          text: data.cannot_answer})].filter(Boolean));
      signalsBox.replaceChildren(el("h2", {text: "Signals waiting for an answer"}),
        table(["sent", "session", "hook", "intensity", "source", "reason", "id"],
          data.signals, function (s) {
            const tr = el("tr");
            tr.append(cell(s.ts), sessionLink(s.session), cell(s.hook),
                      cell(s.intensity, "ask"), cell(s.source), cell(s.reason, "reason"),
                      cell(s.id));
            return tr;
          }),
        el("p", {class: "muted", text: "Answer one with: mcp-hooks respond SIGNAL_ID ACTION"}));
      return data;
    }
    function tell(data) {
      say(data.asks.length + " asks, " + data.signals.length + " signals waiting · live");
    }
    tell(await refresh());
    setInterval(async function () {
      /* New asks appear without a reload, but never under a reason being typed. */
      const typing = Array.from(asksBox.querySelectorAll("input.refusal")).some(
        (i) => i.value || i === document.activeElement);
      if (typing) return;
      try { tell(await refresh()); } catch (err) { say(String(err.message), true); }
    }, PENDING_POLL_MS);
  }

  /* Fleet --------------------------------------------------------------------------- */
  async function fleet() {
    const data = await getJSON("api/fleet");
    main.append(el("p", {text: "Store: " + data.store + " — " + data.health,
                         class: data.health === "ok" ? "" : "problem"}));
    if (data.mismatch) {
      main.append(el("p", {class: "warning", id: "mismatch",
        text: "Replicas run different hooks (their hooks digests differ)."}));
    }
    main.append(table(["replica", "last event", "hooks digest", "events"], data.replicas,
      function (r) {
        const tr = el("tr");
        tr.append(cell(r.replica), cell(r.last), cell(r.digest), cell(r.events));
        return tr;
      }));
    say(data.replicas.length + " replicas seen");
  }

  const PAGES = {activity, hooks, sessions, pending, fleet};
  if (PAGES[page]) PAGES[page]().catch(function (err) {
    main.append(el("p", {class: "problem", text: String(err.message)}));
    say("error", true);
  });
})();
