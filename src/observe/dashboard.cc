#include "observe/dashboard.h"

namespace switchyard::observe {
namespace {

// Kept in one raw string so the binary serves it with no files around it.
constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchyard dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{--bg:#0f1419;--panel:#172029;--ink:#d8e1e8;--dim:#7f8c97;--load:#4aa3ff;--cap:#7bd88f;
--kv:#f4b860;--share:#c792ea;--bad:#ff6b6b}
body{margin:0;font:13px/1.4 system-ui,sans-serif;background:var(--bg);color:var(--ink)}
header{display:flex;gap:16px;align-items:baseline;padding:10px 16px;background:var(--panel)}
h1{font-size:16px;margin:0}h2{font-size:14px;margin:14px 0 6px}h3{font-size:13px;margin:8px 0 4px;color:var(--dim)}
main{padding:6px 16px}.dim{color:var(--dim)}.bad{color:var(--bad)}
table{border-collapse:collapse;width:100%}td,th{padding:3px 6px;text-align:left;border-bottom:1px solid #24303b;white-space:nowrap}
th{color:var(--dim);font-weight:500}.num{text-align:right;font-variant-numeric:tabular-nums}
.legend span{margin-right:12px}.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg text{fill:var(--ink);font-size:11px}.mono{font-family:ui-monospace,monospace;font-size:12px}
section.model{background:var(--panel);border-radius:6px;padding:6px 12px 12px;margin:10px 0}
</style></head>
<body data-ready="0" data-polls="0">
<header><h1>Switchyard</h1><span id="status" class="dim">connecting…</span>
<span class="legend dim"><span><i class="sw" style="background:var(--load)"></i>load (in-flight ÷ peak)</span>
<span><i class="sw" style="background:var(--cap)"></i>learned capacity</span>
<span><i class="sw" style="background:var(--kv)"></i>KV usage</span>
<span><i class="sw" style="background:var(--share)"></i>traffic share</span></span></header>
<main><div id="models"></div>
<section id="optimizer-panel" class="model" hidden><h2>GPU-mix optimizer <span id="optimizer-source" class="dim"></span></h2><div id="optimizer"></div></section>
<h2>Traffic share over the last minutes</h2><div id="history"></div>
<h2>Recent decisions</h2><div id="decisions" class="mono"></div></main>
<script>
"use strict";
const WINDOW_MS = 5 * 60 * 1000, POLL_MS = 1000;
const history = [];  // {t, counts: {key: requests_total}}
let polls = 0, peakLoad = 1;
const esc = s => String(s).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const fmt = (v, d = 1) => v == null || Number.isNaN(v) ? "–" : Number(v).toFixed(d);
function bar(value, max, color, label) {
  const w = 140, frac = value == null || !(max > 0) ? 0 : Math.max(0, Math.min(1, value / max));
  return `<svg class="bar" width="${w + 130}" height="14" data-value="${value == null ? "" : value}">` +
    `<rect x="0" y="1" width="${w}" height="12" fill="#24303b"/>` +
    `<rect x="0" y="1" width="${(w * frac).toFixed(1)}" height="12" fill="${color}"/>` +
    `<text x="${w + 6}" y="11">${esc(label)}</text></svg>`;
}
function shareOver(key, windowMs) {
  if (history.length < 2) return null;
  const last = history[history.length - 1];
  let first = history[0];
  for (const h of history) { if (last.t - h.t <= windowMs) { first = h; break; } }
  let total = 0;
  for (const k in last.counts) total += last.counts[k] - (first.counts[k] || 0);
  if (total <= 0) return null;
  return (last.counts[key] - (first.counts[key] || 0)) / total;
}
function renderFleet(fleet) {
  const now = Date.now(), counts = {};
  let replicas = 0;
  for (const m of fleet.models) for (const r of m.replicas) {
    counts[m.name + "|" + r.name] = r.requests_total;
    peakLoad = Math.max(peakLoad, r.running);
  }
  history.push({t: now, counts});
  while (history.length > 2 && now - history[0].t > WINDOW_MS) history.shift();
  let html = "";
  for (const m of fleet.models) {
    let maxCap = 0;
    for (const r of m.replicas) if (r.capacity && r.capacity.decode > maxCap) maxCap = r.capacity.decode;
    const groups = {};
    for (const r of m.replicas) (groups[(r.labels && r.labels.gpu) || "unknown"] ||= []).push(r);
    html += `<section class="model" data-model="${esc(m.name)}"><h2>${esc(m.name)} <span class="dim">` +
      `strategy ${esc(m.routing_strategy || fleet.default_strategy)}` +
      (m.score_strategy ? ` · score now under ${esc(m.score_strategy)} (lower wins)` : "") + `</span></h2>`;
    for (const gpu of Object.keys(groups).sort()) {
      html += `<h3>GPU ${esc(gpu)}</h3><table><tr><th>replica</th><th>load</th><th>capacity</th>` +
        `<th>KV usage</th><th>share (5 min)</th><th class="num">score now</th><th>health</th><th>signals</th></tr>`;
      for (const r of groups[gpu]) {
        ++replicas;
        const share = shareOver(m.name + "|" + r.name, WINDOW_MS);
        const cap = r.capacity ? r.capacity.decode : null;
        const kv = r.signals ? r.signals.kv_usage : null;
        const state = !r.health || r.health === "healthy" ? (r.health || "–") :
          `<span class="bad">${esc(r.health)}${r.health_reason && r.health_reason !== "none" ? " (" + esc(r.health_reason) + ")" : ""}</span>`;
        const health = r.signals && r.signals.fresh ? "fresh" :
          `<span class="bad">stale${r.signals && r.signals.age_ms != null ? " " + r.signals.age_ms + " ms" : ""}</span>`;
        html += `<tr class="replica" data-replica="${esc(r.name)}" data-gpu="${esc(gpu)}">` +
          `<td>${esc(r.name)}</td>` +
          `<td>${bar(r.running, peakLoad, "var(--load)", r.running + " in flight" +
             (r.signals && r.signals.waiting != null ? ", " + r.signals.waiting + " queued" : ""))}</td>` +
          `<td>${bar(cap, maxCap, "var(--cap)", cap == null ? "learning" : fmt(cap, 0) + " " + r.capacity.unit)}</td>` +
          `<td>${bar(kv, 1, "var(--kv)", kv == null ? "unknown" : fmt(kv * 100, 0) + " %")}</td>` +
          `<td>${bar(share, 1, "var(--share)", share == null ? "–" : fmt(share * 100, 0) + " %")}</td>` +
          `<td class="num">${r.score == null ? "–" : fmt(r.score, 3)}</td><td>${state}</td><td>${health}</td></tr>`;
      }
      html += `</table>`;
    }
    html += `</section>`;
  }
  document.getElementById("models").innerHTML = html;
  renderHistory(fleet);
  return replicas;
}
function renderHistory(fleet) {
  // Request rate share per replica between consecutive polls, as stacked bars over time.
  const keys = [];
  for (const m of fleet.models) for (const r of m.replicas) keys.push(m.name + "|" + r.name);
  const palette = ["#4aa3ff", "#7bd88f", "#f4b860", "#c792ea", "#ff6b6b", "#5ee0d0", "#e0d45e", "#9aa7ff"];
  const W = 720, H = 120, n = history.length - 1;
  let svg = `<svg id="share-chart" width="${W}" height="${H + 16}">`;
  let drawn = 0;
  for (let i = 1; i <= n; ++i) {
    const a = history[i - 1].counts, b = history[i].counts;
    let total = 0;
    for (const k of keys) total += Math.max(0, (b[k] || 0) - (a[k] || 0));
    if (total <= 0) continue;
    const x = (W * (i - 1)) / Math.max(1, n), w = Math.max(1, W / Math.max(1, n) - 1);
    let y = H;
    keys.forEach((k, j) => {
      const h = (H * Math.max(0, (b[k] || 0) - (a[k] || 0))) / total;
      y -= h;
      svg += `<rect class="share" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${h.toFixed(1)}" fill="${palette[j % palette.length]}"/>`;
    });
    ++drawn;
  }
  svg += `<text x="0" y="${H + 13}">${drawn ? "" : "no traffic yet"}</text></svg><div class="legend dim">` +
    keys.map((k, j) => `<span><i class="sw" style="background:${palette[j % palette.length]}"></i>${esc(k)}</span>`).join("") + `</div>`;
  document.getElementById("history").innerHTML = svg;
}
function renderDecisions(d) {
  const rows = d.decisions.slice(0, 25).map(x => {
    const cands = x.candidates.map(c => c.excluded ? `<span class="bad">${esc(c.replica)}(${esc(c.excluded)})</span>`
      : `${c.replica === x.chosen ? "<b>" : ""}${esc(c.replica)}=${c.score == null ? "inf" : fmt(c.score, 3)}${c.replica === x.chosen ? "</b>" : ""}`).join(" ");
    return `<tr class="decision"><td>${new Date(x.time_unix_ms).toLocaleTimeString()}</td><td>${esc(x.request_id)}</td>` +
      `<td>${esc(x.model)}</td><td>${esc(x.strategy)}</td><td>${esc(x.chosen || "none")}</td>` +
      `<td class="num">${fmt(x.latency_us, 1)} µs</td><td>${cands}</td></tr>`;
  }).join("");
  document.getElementById("decisions").innerHTML = `<table><tr><th>time</th><th>request</th><th>model</th>` +
    `<th>strategy</th><th>chosen</th><th class="num">routing</th><th>candidates (score, lower wins)</th></tr>${rows}</table>`;
  return d.decisions.length;
}
function renderOptimizer(p) {
  // The optimizer's answer as the gateway last fetched it (load_monitor.optimizer_url).
  const panel = document.getElementById("optimizer-panel");
  panel.hidden = !p.optimizer_url;
  if (!p.optimizer_url) return;
  document.getElementById("optimizer-source").textContent = p.optimizer_url +
    (p.fetched_unix_ms ? " · fetched " + new Date(p.fetched_unix_ms).toLocaleTimeString() : "");
  let html = p.error ? `<div class="bad">${esc(p.error)}</div>` : "";
  const o = p.optimizer;
  if (o && o.config_error) html += `<div class="bad">config error: ${esc(o.config_error)}</div>`;
  for (const m of (o && o.models) || []) {
    html += `<h3 data-optimizer-model="${esc(m.model)}">${esc(m.model)}: ` +
      (m.no_load ? "no load" : (m.feasible ? "feasible" : `<span class="bad">infeasible</span>`)) +
      ` · $${fmt(m.cost, 2)}/h · solved in ${fmt(m.solve_ms, 1)} ms · ${fmt(m.load.current_rps, 2)} req/s now, ` +
      `${fmt(m.load.window_rps, 2)} over ${fmt(m.load.window_seconds, 0)} s</h3>`;
    if (m.note) html += `<div class="bad">${esc(m.note)}</div>`;
    html += `<table><tr><th>deployment</th><th>GPU</th><th class="num">replicas</th><th class="num">$/h each</th><th>serves (prompt × output: req/s)</th></tr>`;
    for (const d of m.deployments) {
      const cells = d.cells.map(c => `${fmt(c.prompt_tokens, 0)}×${fmt(c.output_tokens, 0)}: ${fmt(c.rps, 2)}`).join(", ");
      html += `<tr class="optimizer-deployment" data-deployment="${esc(d.name)}" data-replicas="${d.replicas}">` +
        `<td>${esc(d.namespace + "/" + d.name)}</td><td>${esc(d.gpu)}</td><td class="num">${d.replicas}` +
        `${d.override >= 0 ? " (override)" : ""}</td><td class="num">${fmt(d.cost, 3)}</td><td>${esc(cells)}</td></tr>`;
    }
    html += `</table>`;
  }
  document.getElementById("optimizer").innerHTML = html || `<span class="dim">no answer yet</span>`;
}
async function poll() {
  try {
    const [fleet, decisions] = await Promise.all([
      fetch("/debug/fleet", {cache: "no-store"}).then(r => r.json()),
      fetch("/debug/decisions", {cache: "no-store"}).then(r => r.json())]);
    const replicas = renderFleet(fleet), n = renderDecisions(decisions);
    fetch("/debug/optimizer", {cache: "no-store"}).then(r => r.json()).then(renderOptimizer, () => {});
    ++polls;
    Object.assign(document.body.dataset, {ready: "1", polls: String(polls), replicas: String(replicas), decisions: String(n)});
    document.getElementById("status").textContent = `updated ${new Date().toLocaleTimeString()} · snapshot v${fleet.version} · ${polls} polls`;
  } catch (e) {
    document.getElementById("status").innerHTML = `<span class="bad">poll failed: ${esc(e)}</span>`;
  }
  setTimeout(poll, POLL_MS);
}
poll();
</script></body></html>
)HTML";

}  // namespace

std::string_view dashboardHtml() { return kPage; }

}  // namespace switchyard::observe
