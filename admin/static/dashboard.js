/* trio-broker dashboard: live figures from /v1/metrics, trend charts and tuning advice
 * from /v1/dashboard (the Spark jobs' dashboard.json and the advisor's
 * recommendations.json). Charts are uPlot. With an admin token, open
 * /dashboard#token=<token>: it is kept in sessionStorage and sent as a bearer token.
 * Each chart's element carries data-points (values drawn); <body data-state> becomes
 * "ready" once live figures and trends have both been drawn. */
"use strict";

const COLORS = ["#2f6fdf", "#d9822b", "#2a9d5c", "#c23b3b", "#7a4fc9", "#15868f", "#8a6d3b"];
const LIVE_POINTS = 150;
const LIVE_EVERY_MS = 2000;
const TRENDS_EVERY_MS = 60000;

const token = (() => {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) sessionStorage.setItem("trio-broker-token", decodeURIComponent(m[1]));
  return sessionStorage.getItem("trio-broker-token");
})();

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const fmt = (v, digits = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const pct = (v) => (v === null || v === undefined ? "–" : Math.round(v * 100) + "%");

const done = { live: false, trends: false };
function markReady(part) {
  done[part] = true;
  if (done.live && done.trends) document.body.dataset.state = "ready";
}

/* ---------------------------------------------------------------- charts */

function chart(container, title, unit, xs, series, { width = 420, height = 170 } = {}) {
  const box = el("div", { class: "chart" }, el("div", { class: "title" }, title + " (" + unit + ")"));
  container.append(box);
  const opts = {
    width, height,
    scales: { x: { time: true } },
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5 }))],
    axes: [{}, { size: 55 }],
    legend: { live: false },
  };
  const u = new uPlot(opts, [xs, ...series.map((s) => s.values)], box);
  const points = series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
  box.dataset.points = String(points);
  box.dataset.chart = title;
  return { box, u };
}

/* ------------------------------------------------------------------ live */

const live = { t: [], ioIdle: [], netIdle: {}, depth: [], charts: null };

function renderLive(m) {
  document.getElementById("broker").textContent = "broker " + m.broker_id;
  const cards = document.getElementById("pools");
  cards.replaceChildren();
  const io = m.pools.io;
  const card = (name, value, sub, warn) =>
    el("div", { class: "card" + (warn ? " warn" : "") }, el("div", { class: "name" }, name),
      el("div", { class: "value" }, value), el("div", { class: "sub" }, sub));
  cards.append(card("io pool", io.size + " threads", "idle " + pct(io.idle_ratio) + ", busy " + io.busy, io.idle_ratio < 0.2));
  for (const [name, p] of Object.entries(m.pools.network)) {
    cards.append(card("network " + name, p.size + " threads", "idle " + pct(p.idle_ratio), p.idle_ratio < 0.3));
  }
  for (const [plane, q] of Object.entries(m.request_queue)) {
    cards.append(card("request queue (" + plane + ")", String(q.size), "of " + q.capacity, q.size > 0));
  }
  const c = m.connections;
  cards.append(card("connections", String(c.count), c.muted + " muted, " + c.throttled + " throttled", false));

  const body = document.querySelector("#latency tbody");
  body.replaceChildren();
  const names = Object.keys(m.requests).sort((a, b) => m.requests[b].count - m.requests[a].count);
  for (const name of names) {
    const r = m.requests[name];
    body.append(el("tr", {}, el("td", { class: "text" }, name), el("td", {}, fmt(r.rate_per_s)),
      el("td", {}, fmt(r.queue_time_ms.p50, 3)), el("td", {}, fmt(r.queue_time_ms.p99, 3)),
      el("td", {}, fmt(r.local_time_ms.p50, 3)), el("td", {}, fmt(r.local_time_ms.p99, 3)),
      el("td", {}, fmt(r.total_time_ms.p50, 3)), el("td", {}, fmt(r.total_time_ms.p99, 3)),
      el("td", {}, r.errors)));
  }

  live.t.push(Date.parse(m.ts) / 1000);
  live.ioIdle.push(io.idle_ratio);
  live.depth.push(m.request_queue.data ? m.request_queue.data.size : null);
  for (const [name, p] of Object.entries(m.pools.network)) {
    (live.netIdle[name] = live.netIdle[name] || new Array(live.t.length - 1).fill(null)).push(p.idle_ratio);
  }
  if (live.t.length > LIVE_POINTS) {
    live.t.shift(); live.ioIdle.shift(); live.depth.shift();
    for (const v of Object.values(live.netIdle)) v.shift();
  }
  const idleSeries = [{ label: "io", values: live.ioIdle },
    ...Object.entries(live.netIdle).map(([n, v]) => ({ label: "network " + n, values: v }))];
  if (!live.charts) {
    const box = document.getElementById("live-charts");
    live.charts = [
      chart(box, "Idle ratio, live", "ratio", live.t, idleSeries),
      chart(box, "Request queue depth, live", "requests", live.t, [{ label: "data", values: live.depth }]),
    ];
  } else {
    live.charts[0].u.setData([live.t, ...idleSeries.map((s) => s.values)]);
    live.charts[1].u.setData([live.t, live.depth]);
    for (const c of live.charts) c.box.dataset.points = String(live.t.length);
  }
  document.body.dataset.liveSeq = String(m.seq);
  markReady("live");
}

async function pollLive() {
  try {
    renderLive(await api("/v1/metrics"));
    setStatus(null);
  } catch (e) {
    setStatus("live metrics: " + e.message);
  }
  setTimeout(pollLive, LIVE_EVERY_MS);
}

/* ------------------------------------------------- trends and advice */

function renderTrends(trends) {
  const root = document.getElementById("trend-brokers");
  root.replaceChildren();
  if (!trends) {
    root.append(el("p", { class: "empty" }, "No dashboard.json yet: run the trends job with --out set to dashboard.data.dir."));
    return 0;
  }
  document.getElementById("trends-time").textContent =
    "(generated " + trends.generated_at + ", " + trends.bucket_s + " s buckets, " +
    trends.input.snapshots + " snapshots, " + trends.input.corrupt_lines + " corrupt lines)";
  let drawn = 0;
  for (const b of trends.brokers) {
    root.append(el("h3", {}, "broker " + b.broker_id));
    const box = el("div", { class: "charts" });
    root.append(box);
    for (const c of b.charts) {
      chart(box, c.title, c.unit, b.time, c.series);
      drawn += 1;
    }
  }
  document.body.dataset.trendCharts = String(drawn);
  return drawn;
}

function renderAdvice(advice) {
  const body = document.querySelector("#recommendations tbody");
  body.replaceChildren();
  const effects = document.getElementById("effects");
  effects.replaceChildren();
  if (!advice) {
    body.append(el("tr", {}, el("td", { class: "text empty", colspan: "7" }, "No advice yet: run spark_jobs.advise.")));
    return;
  }
  document.getElementById("advice-time").textContent = "(" + advice.generated_at + ")";
  if (advice.recommendations.length === 0) {
    body.append(el("tr", {}, el("td", { class: "text empty", colspan: "7" }, "No change recommended.")));
  }
  for (const r of advice.recommendations) {
    const ev = r.evidence || {};
    body.append(el("tr", { class: r.status },
      el("td", { class: "text" }, r.status), el("td", {}, r.broker_id),
      el("td", { class: "text" }, r.setting + (r.listener ? " (" + r.listener + ")" : "")),
      el("td", {}, r.current), el("td", {}, r.recommended),
      el("td", { class: "text" }, r.reason + (r.note ? " — " + r.note : "")),
      el("td", { class: "text" }, (ev.from || "") + " .. " + (ev.to || ""))));
  }
  for (const e of advice.effects || []) {
    effects.append(el("li", {}, e.setting + " " + e.from + " → " + e.to + " at " + e.at +
      ": queue time " + fmt(e.before.queue_time_ms_mean) + " → " + fmt(e.after.queue_time_ms_mean) +
      " ms, idle " + pct(e.before.idle_ratio_mean) + " → " + pct(e.after.idle_ratio_mean)));
  }
}

async function pollTrends() {
  try {
    const d = await api("/v1/dashboard");
    renderTrends(d.trends);
    renderAdvice(d.recommendations);
    if (d.problems && d.problems.length) setStatus(d.problems.join("; "));
    markReady("trends");
  } catch (e) {
    setStatus("trends: " + e.message);
  }
  setTimeout(pollTrends, TRENDS_EVERY_MS);
}

function setStatus(problem) {
  const s = document.getElementById("status");
  s.textContent = problem || "live, updated " + new Date().toLocaleTimeString();
}

pollLive();
pollTrends();
