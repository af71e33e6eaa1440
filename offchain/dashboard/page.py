# ruff: noqa: E501, RUF001 - the page is HTML and JavaScript, not Python
"""The dashboard's one page: plain HTML, CSS and JavaScript that polls `/api/state` and redraws."""

from __future__ import annotations

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Refereed Training dashboard</title>
<style>
  :root { --bg:#10141a; --panel:#181e27; --line:#2a3340; --text:#dde3ea; --dim:#8895a5;
          --def:#3fc1d9; --cha:#f0c24a; --ok:#5fd08a; --bad:#f06a6a; }
  body { margin:0; font:14px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--text); }
  header { display:flex; gap:24px; align-items:baseline; padding:12px 20px; border-bottom:1px solid var(--line); }
  header h1 { font-size:18px; margin:0; }
  .dim { color:var(--dim); }
  .dot { display:inline-block; width:10px; height:10px; border-radius:50%; background:var(--ok); margin-right:6px; }
  .dot.stale { background:var(--bad); }
  main { padding:12px 20px; display:grid; gap:16px; }
  section { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:10px 14px; }
  h2 { font-size:15px; margin:0 0 8px; }
  table { border-collapse:collapse; width:100%; }
  th, td { text-align:left; padding:3px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
  th { color:var(--dim); font-weight:normal; }
  .mono { font-family:ui-monospace, monospace; font-size:12px; }
  .status-open { color:var(--cha); } .status-finalized { color:var(--ok); }
  .games { display:grid; grid-template-columns:repeat(auto-fill, minmax(560px, 1fr)); gap:12px; }
  .game { border:1px solid var(--line); border-radius:6px; padding:8px; }
  .legend span { margin-right:14px; }
  .def { color:var(--def); } .cha { color:var(--cha); }
  #error { color:var(--bad); }
  .feed td { white-space:normal; }
</style>
</head>
<body>
<header>
  <h1>Refereed Training</h1>
  <span id="live"><span class="dot stale" id="dot"></span><span id="livetext">connecting…</span></span>
  <span class="dim" id="chain"></span>
  <span id="error"></span>
</header>
<main>
  <section><h2>Tasks</h2><table id="tasks"></table></section>
  <section><h2>Trainers and groups</h2><div id="entrants"></div></section>
  <section><h2>Games</h2>
    <div class="legend dim"><span class="def">● defender</span><span class="cha">● challenger</span>
      <span>x: the game's transactions in order; y: the stage of each move</span></div>
    <div class="games" id="games"></div></section>
  <section><h2>Oracle questions</h2><div class="dim" id="oracles"></div><table id="questions"></table></section>
  <section><h2>Contributions and attribution</h2><div class="dim" id="ledger"></div></section>
  <section><h2>Transactions</h2><table class="feed" id="feed"></table></section>
</main>
<script>
"use strict";
const STAGES = ["checkpoint descent", "step bisection", "trace descent", "post state count", "post state descent",
                "node reveal", "input proof", "post state proof", "oracle", "resolved"];
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const eth = (wei) => (Number(BigInt(wei) / 1000000000000n) / 1e6).toFixed(4) + " ETH";
const short = (a) => a ? a.slice(0, 6) + "…" + a.slice(-4) : "";
const local = (t) => new Date(t * 1000).toLocaleString();
function row(cells, tag) { return "<tr>" + cells.map((c) => `<${tag || "td"}>${c}</${tag || "td"}>`).join("") + "</tr>"; }

function timeline(game, moves) {
  const W = 540, H = 150, L = 120, R = 10, T = 10, B = 22;
  const pts = moves.filter((m) => m.kind === "move" || m.kind === "open" || m.kind === "resolve" || m.kind === "settle");
  if (!pts.length) return `<svg width="${W}" height="${H}"></svg>`;
  const t0 = pts[0].chain_time, t1 = pts[pts.length - 1].chain_time, n = Math.max(1, pts.length - 1);
  const x = (i) => L + (W - L - R) * i / n;
  const y = (s) => T + (H - T - B) * s / (STAGES.length - 1);
  let svg = `<svg width="${W}" height="${H}" role="img" aria-label="moves of game ${game}">`;
  STAGES.forEach((s, i) => { svg += `<text x="${L - 6}" y="${y(i) + 4}" fill="#8895a5" font-size="10" text-anchor="end">${s}</text>` +
    `<line x1="${L}" x2="${W - R}" y1="${y(i)}" y2="${y(i)}" stroke="#2a3340"/>`; });
  let prev = null;
  pts.forEach((m, i) => {
    const si = m.stage ? Math.max(0, STAGES.indexOf(m.stage)) : (m.kind === "open" ? 0 : STAGES.length - 1);
    const px = x(i), py = y(si);
    if (prev) svg += `<line x1="${prev[0]}" y1="${prev[1]}" x2="${px}" y2="${py}" stroke="#55606e"/>`;
    const colour = m.side === "defender" ? "#3fc1d9" : m.side === "challenger" ? "#f0c24a" : "#dde3ea";
    svg += `<circle cx="${px}" cy="${py}" r="4" fill="${colour}"><title>${esc(m.text)}</title></circle>`;
    prev = [px, py];
  });
  svg += `<text x="${L}" y="${H - 6}" fill="#8895a5" font-size="10">opened</text>` +
         `<text x="${W - R}" y="${H - 6}" fill="#8895a5" font-size="10" text-anchor="end">transaction ${pts.length}, ${t1 - t0} s of chain time</text></svg>`;
  return svg;
}

function draw(s) {
  document.getElementById("dot").className = "dot" + (s.ok ? "" : " stale");
  document.getElementById("livetext").textContent = s.ok ? "live" : "stale";
  document.getElementById("error").textContent = s.error || "";
  if (!s.chain) return;
  document.getElementById("chain").textContent =
    `chain ${s.chain.id} · block ${s.chain.block} · chain time ${local(s.chain.time)} · updated ${new Date(s.updated * 1000).toLocaleTimeString()}`;
  document.getElementById("tasks").innerHTML = row(["task", "status", "waits for", "reward", "trainers", "groups", "games", "finalize from"], "th") +
    s.tasks.map((t) => row([t.task, `<span class="status-${esc(t.status)}">${esc(t.status)}</span>`, esc(t.waits_for), eth(t.reward_wei),
      `${t.joined}/${t.slots} (+${t.outside_challengers})`, `${t.group_count} (${t.live_groups} live)`, t.games.length,
      t.finalize_at ? local(t.finalize_at) : (t.won ? `won by group ${t.winning_group}` : "–")])).join("");
  document.getElementById("entrants").innerHTML = s.tasks.map((t) =>
    `<h3 class="dim">task ${t.task}</h3><table>` + row(["entrant", "on", "committed", "revealed", "group", "eliminated", "claimed"], "th") +
    t.entrants.map((e) => row([`<span class="mono">${esc(e.address)}</span>`, e.on, e.committed ? "yes" : "no", e.revealed ? "yes" : "no",
      e.group ?? "", e.eliminated ? "<b>yes</b>" : "no", e.claimed ? "yes" : "no"])).join("") + "</table>" +
    (t.groups.length ? "<table>" + row(["group", "checkpoint root", "members", "live", "eliminated"], "th") +
      t.groups.map((g) => row([g.group, `<span class="mono">${esc(g.checkpoint_root.slice(0, 18))}…</span>`, g.members.map(short).join(", "),
        g.live, g.eliminated ? "<b>yes</b>" : "no"])).join("") + "</table>" : "")).join("");
  const games = s.tasks.flatMap((t) => t.games.map((g) => ({...g, task: t.task})));
  document.getElementById("games").innerHTML = games.length ? games.map((g) =>
    `<div class="game" id="game-${g.game}"><b>game ${g.game}</b> (task ${g.task}) · <span class="def">${short(g.defender)}</span> (group ${g.defender_group}) vs ` +
    `<span class="cha">${short(g.challenger)}</span> (group ${g.challenger_group}) · ${esc(g.stage.replaceAll("_", " "))} · ${g.moves} moves · ` +
    `${esc(g.outcome.replaceAll("_", " "))}${g.settled ? " · settled" : ""}` +
    (g.on_chain ? ` · on chain: element game ${g.on_chain.element_game}` + (g.on_chain.dot_game ?
      `, dot game ${g.on_chain.dot_game.game} (K = ${g.on_chain.dot_game.k}, prefix sums [${g.on_chain.dot_game.range.join(", ")}])` : "") +
      (g.on_chain.trace_game ? `, trace game ${g.on_chain.trace_game.game} (${esc(g.on_chain.trace_game.function)}, ${g.on_chain.trace_game.steps} steps)` : "") +
      (g.on_chain.sum_game ? `, sum game ${g.on_chain.sum_game.game} (L = ${g.on_chain.sum_game.length}, prefix sums [${g.on_chain.sum_game.range.join(", ")}])` : "") +
      ", no oracle" : "") + "<br>" + timeline(g.game, s.timelines[String(g.game)] || []) + "</div>").join("")
    : '<span class="dim">no game yet</span>';
  document.getElementById("oracles").textContent = `${s.oracles} oracle slots registered`;
  document.getElementById("questions").innerHTML = s.questions.length ? row(["question", "game", "status", "deadline"], "th") +
    s.questions.map((q) => row([q.question, q.game, esc(q.status), local(q.deadline)])).join("") : "";
  document.getElementById("ledger").textContent = s.ledger ? JSON.stringify(s.ledger) : "no contribution ledger is deployed on this chain";
  document.getElementById("feed").innerHTML = row(["block", "chain time", "sender", "what", "gas"], "th") +
    s.feed.slice().reverse().slice(0, 30).map((l) => row([l.block, local(l.chain_time), esc(l.sender), esc(l.text), l.gas.toLocaleString()])).join("");
}

async function poll() {
  try {
    const r = await fetch("/api/state", {cache: "no-store"});
    draw(await r.json());
  } catch (e) {
    document.getElementById("dot").className = "dot stale";
    document.getElementById("livetext").textContent = "the dashboard server does not answer";
  }
  setTimeout(poll, 1000);
}
poll();
</script>
</body>
</html>
"""
