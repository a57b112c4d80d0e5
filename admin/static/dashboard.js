/* trio-broker dashboard: live figures from /v1/metrics, trend charts, tuning advice and
 * the cluster view from /v1/dashboard (the Spark jobs' dashboard.json, the advisor's
 * recommendations.json and the balance job's balance/plan.json; the cluster view and
 * the verdicts are drawn by cluster.js). Charts are uPlot. With an admin token, open
 * /dashboard#token=<token>: it is kept in sessionStorage and sent as a bearer token.
 * Without a token where one is needed, the page says so ("token needed: ...") and
 * <body data-state> is "token-needed".
 * Each chart's element carries data-points (values drawn), data-gaps (breaks drawn) and
 * data-y-ticks (the labels of its y axis); <body data-state> becomes "ready" once live
 * figures and trends have both been drawn, and <body data-scroll-width> tells whether
 * the page fits its window (data-viewport-width). */
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

class TokenNeeded extends Error {}

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) {
    throw new TokenNeeded(token
      ? "token rejected: open /dashboard#token=... with the admin token (admin.token)"
      : "token needed: open /dashboard#token=... with the admin token (admin.token)");
  }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function showTokenNeeded(message) {
  document.body.dataset.state = "token-needed";
  const box = document.getElementById("token-needed");
  box.hidden = false;
  box.textContent = message;
  setStatus(message);
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
/* "1 connection", "2 connections"; irregular plurals passed in. */
const plural = (n, one, many = one + "s") => n + " " + (Number(n) === 1 ? one : many);

const done = { live: false, trends: false };
function markReady(part) {
  done[part] = true;
  if (done.live && done.trends) document.body.dataset.state = "ready";
}

/* ---------------------------------------------------------------- charts */

/* Tick labels with as many decimals as the step between ticks needs (0.995 and 1 are
 * told apart); ratios on a fixed 0..1 scale. */
function tickLabels(splits, incr) {
  const step = incr || (splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 1);
  let digits = 0;  // the fewest decimals that write the step exactly (0.0025: 4)
  while (digits < 6 && step > 0 && Math.abs(step * 10 ** digits - Math.round(step * 10 ** digits)) > 1e-6) digits++;
  return splits.map((v) => (v === null ? "" : Number(v).toFixed(digits)));
}

/* Where the time axis skips more than one step, a null point so that the line breaks. */
function withGaps(xs, seriesValues, step) {
  if (!step || xs.length < 2) return { xs, values: seriesValues, gaps: 0 };
  const outX = [xs[0]];
  const out = seriesValues.map((v) => [v[0]]);
  let gaps = 0;
  for (let i = 1; i < xs.length; i++) {
    if (xs[i] - xs[i - 1] > step * 1.5) {
      outX.push(xs[i - 1] + step);
      for (const o of out) o.push(null);
      gaps += 1;
    }
    outX.push(xs[i]);
    seriesValues.forEach((v, j) => out[j].push(v[i]));
  }
  return { xs: outX, values: out, gaps };
}

/* Breaks in the lines drawn: runs of nulls between values, over all series. */
function countGaps(series) {
  let gaps = 0;
  for (const values of series) {
    let seen = false, inGap = false;
    for (const v of values) {
      if (v === null || v === undefined) { if (seen) inGap = true; }
      else { if (inGap) gaps += 1; seen = true; inGap = false; }
    }
  }
  return gaps;
}

/* 420 px, or two charts side by side in a narrow window (800 px). */
function chartWidth() {
  const w = document.documentElement.clientWidth;
  return w >= 1000 ? 420 : Math.max(260, Math.floor((w - 40) / 2) - 24);
}

function chart(container, title, unit, xs, series, { height = 170 } = {}) {
  const box = el("div", { class: "chart" }, el("div", { class: "title" }, title + " (" + unit + ")"));
  container.append(box);
  const ratio = unit === "ratio";
  const opts = {
    width: chartWidth(), height,
    scales: { x: { time: true }, y: ratio ? { range: [0, 1] } : {} },
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false }))],
    axes: [{}, {
      size: 60,
      values: (u, splits, axisIdx, space, incr) => {
        const labels = tickLabels(splits, incr);
        box.dataset.yTicks = labels.join(" ");
        return labels;
      },
    }],
    legend: { live: false },
  };
  const u = new uPlot(opts, [xs, ...series.map((s) => s.values)], box);
  const c = { box, u };
  describe(c, series.map((s) => s.values));
  box.dataset.chart = title;
  return c;
}

function describe(c, values) {
  c.box.dataset.points = String(values.reduce((n, v) => n + v.filter((x) => x !== null && x !== undefined).length, 0));
  c.box.dataset.gaps = String(countGaps(values));
}

/* ------------------------------------------------------------------ live */

/* Live series: one point per poll; a failed poll, or a poll late by more than one
 * interval, is a null point (a gap in every line). */
const live = { t: [], ioIdle: [], loopIdle: [], netIdle: {}, depth: [], ioWaiting: [],
  stallP99: [], stallMax: [], charts: null, lastT: null, gaps: 0 };
/* Cumulative error counts per request type, as [uptime_s, errors], for windowed rates. */
const errorHistory = { uptime: null, byName: {} };
let livePools = null;

function pushLive(t, point) {
  const names = Object.keys(live.netIdle);
  if (live.lastT !== null && point !== null && t - live.lastT > 2.5 * LIVE_EVERY_MS / 1000) {
    pushLive(live.lastT + LIVE_EVERY_MS / 1000, null);  // a poll missed: break the lines
  }
  live.t.push(t);
  live.ioIdle.push(point ? point.ioIdle : null);
  live.loopIdle.push(point ? point.loopIdle : null);
  live.depth.push(point ? point.depth : null);
  live.ioWaiting.push(point ? point.ioWaiting : null);
  live.stallP99.push(point ? point.stallP99 : null);
  live.stallMax.push(point ? point.stallMax : null);
  const net = point ? point.netIdle : {};
  for (const name of new Set([...names, ...Object.keys(net)])) {
    (live.netIdle[name] = live.netIdle[name] || new Array(live.t.length - 1).fill(null))
      .push(name in net ? net[name] : null);
  }
  if (point === null) live.gaps += 1;
  else live.lastT = t;
  if (live.t.length > LIVE_POINTS) {
    for (const a of [live.t, live.ioIdle, live.loopIdle, live.depth, live.ioWaiting, live.stallP99, live.stallMax]) a.shift();
    for (const v of Object.values(live.netIdle)) v.shift();
  }
}

function drawLive() {
  const idleSeries = [{ label: "io threads", values: live.ioIdle },
    ...Object.entries(live.netIdle).map(([n, v]) => ({ label: "network " + n, values: v })),
    { label: "event loop", values: live.loopIdle }];
  const depthSeries = [{ label: "data requests", values: live.depth },
    { label: "storage jobs waiting", values: live.ioWaiting }];
  const stallSeries = [{ label: "p99", values: live.stallP99 }, { label: "max", values: live.stallMax }];
  const all = [idleSeries, depthSeries, stallSeries];
  if (!live.charts || live.charts.series !== idleSeries.length) {
    const box = document.getElementById("live-charts");
    box.replaceChildren();
    live.charts = {
      series: idleSeries.length,
      list: [
        chart(box, "Idle ratio, live", "ratio", live.t, idleSeries),
        chart(box, "Queue depth, live", "count", live.t, depthSeries),
        chart(box, "Event loop stall, last second", "ms", live.t, stallSeries),
      ],
    };
  } else {
    live.charts.list.forEach((c, i) => {
      c.u.setData([live.t, ...all[i].map((s) => s.values)]);
      describe(c, all[i].map((s) => s.values));
    });
  }
  const gaps = document.getElementById("live-gaps");
  gaps.textContent = live.gaps ? plural(live.gaps, "gap") + " (missed polls)" : "";
  gaps.dataset.gaps = String(live.gaps);
}

/* Errors per second over the metrics window (as rate_per_s), from the cumulative counts
 * of the snapshots seen; null until two snapshots span some time. */
function errorRates(m) {
  if (errorHistory.uptime !== null && m.uptime_s < errorHistory.uptime) errorHistory.byName = {};  // restarted
  errorHistory.uptime = m.uptime_s;
  const window = m.window_s || 60;
  const rates = {};
  for (const [name, r] of Object.entries(m.requests)) {
    const h = (errorHistory.byName[name] = errorHistory.byName[name] || []);
    h.push([m.uptime_s, r.errors]);
    while (h.length > 2 && h[1][0] <= m.uptime_s - window) h.shift();
    const [t0, e0] = h[0];
    rates[name] = m.uptime_s > t0 ? (r.errors - e0) / (m.uptime_s - t0) : null;
  }
  return rates;
}

function card(name, value, sub, warn) {
  return el("div", { class: "card" + (warn ? " warn" : "") }, el("div", { class: "name" }, name),
    el("div", { class: "value" }, value), el("div", { class: "sub" }, sub));
}

function renderLive(m, pools) {
  document.getElementById("broker").textContent = "broker " + m.broker_id;
  livePools = pools ? { brokerId: m.broker_id, ...pools } : null;
  const cards = document.getElementById("pools");
  cards.replaceChildren();
  const io = m.pools.io;
  const ioIdle = io.storage_idle_ratio ?? io.idle_ratio;
  const ioQueue = io.storage_queue_time_ms || {};
  cards.append(card("io pool", plural(io.size, "thread"),
    "idle " + pct(ioIdle) + ", " + plural(io.storage_waiting ?? 0, "job") + " waiting, queue p99 " +
    fmt(ioQueue.p99, 1) + " ms", ioIdle < 0.2));
  for (const [name, p] of Object.entries(m.pools.network)) {
    cards.append(card("network " + name, plural(p.size, "thread"), "idle " + pct(p.idle_ratio), p.idle_ratio < 0.3));
  }
  const loop = m.event_loop;
  if (loop) {
    const last = loop.last_second || {};
    cards.append(card("event loop", "busy " + pct(loop.busy_ratio),
      "stall p99 " + fmt(loop.stall_ms && loop.stall_ms.p99, 1) + " ms, max " + fmt(loop.stall_ms && loop.stall_ms.max, 1) +
      " ms; last second: busy " + pct(last.busy_ratio) + ", stall max " + fmt(last.stall_max_ms, 1) + " ms",
      loop.busy_ratio >= 0.9));
  }
  for (const [plane, q] of Object.entries(m.request_queue)) {
    cards.append(card("request queue (" + plane + ")", plural(q.size, "request"), "of " + q.capacity, q.size > 0));
  }
  const c = m.connections;
  cards.append(card("connections", plural(c.count, "connection"), c.muted + " muted, " + c.throttled + " throttled", false));
  const cl = m.cluster;
  if (cl && cl.mode === "zookeeper") {
    const r = cl.replication;
    cards.append(card("cluster", plural(cl.brokers, "broker"),
      "controller " + cl.controller_id + (cl.active_controller ? " (this one)" : "") + "; " +
      r.under_replicated_partitions + " under-replicated, " + cl.offline_partitions + " offline; ISR -" +
      r.isr_shrinks + " +" + r.isr_expands + "; follower lag max " + r.max_follower_lag,
      r.under_replicated_partitions > 0 || cl.offline_partitions > 0));
  } else if (cl) {
    cards.append(card("cluster", cl.mode === "static" ? plural(cl.brokers, "broker") : "single broker",
      cl.mode === "static" ? "steered by trio-broker-controller" : "no replication", false));
  }

  const rates = errorRates(m);
  const window = Math.round(m.window_s || 60);
  document.getElementById("errors-window").textContent = "errors/s (" + window + " s)";
  const body = document.querySelector("#latency tbody");
  body.replaceChildren();
  const names = Object.keys(m.requests).sort((a, b) => m.requests[b].count - m.requests[a].count);
  for (const name of names) {
    const r = m.requests[name];
    body.append(el("tr", { "data-request": name }, el("td", { class: "text" }, name), el("td", {}, fmt(r.rate_per_s)),
      el("td", {}, fmt(r.queue_time_ms.p50, 3)), el("td", {}, fmt(r.queue_time_ms.p99, 3)),
      el("td", {}, fmt(r.local_time_ms.p50, 3)), el("td", {}, fmt(r.local_time_ms.p99, 3)),
      el("td", {}, fmt(r.total_time_ms.p50, 3)), el("td", {}, fmt(r.total_time_ms.p99, 3)),
      el("td", { class: "errors" }, fmt(rates[name]))));
  }

  const net = {};
  for (const [name, p] of Object.entries(m.pools.network)) net[name] = p.idle_ratio;
  pushLive(Date.parse(m.ts) / 1000, {
    ioIdle, netIdle: net, loopIdle: loop ? 1 - loop.busy_ratio : null,
    depth: m.request_queue.data ? m.request_queue.data.size : null,
    ioWaiting: io.storage_waiting ?? null,
    stallP99: loop && loop.last_second ? loop.last_second.stall_p99_ms : null,
    stallMax: loop && loop.last_second ? loop.last_second.stall_max_ms : null,
  });
  drawLive();
  if (lastAdvice !== undefined) renderAdvice(lastAdvice);
  document.body.dataset.liveSeq = String(m.seq);
  markReady("live");
}

async function pollLive() {
  try {
    const [m, pools] = await Promise.all([api("/v1/metrics"), api("/v1/pools")]);
    renderLive(m, pools);
    setStatus(null);
  } catch (e) {
    if (e instanceof TokenNeeded) { showTokenNeeded(e.message); return; }
    setStatus("live metrics: " + e.message);
    if (live.t.length) { pushLive(Date.now() / 1000, null); drawLive(); }
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
  const input = trends.input || {};
  const scrapeGaps = (input.markers || {}).gap || 0;
  document.getElementById("trends-time").textContent =
    "(generated " + trends.generated_at + ", " + trends.bucket_s + " s buckets, " +
    plural(input.snapshots ?? 0, "snapshot") + ", " + plural(input.corrupt_lines ?? 0, "corrupt line") +
    ", " + plural(scrapeGaps, "scrape gap") + ")";
  let drawn = 0;
  for (const b of trends.brokers) {
    const heading = el("h3", {}, "broker " + b.broker_id + " ");
    root.append(heading);
    const box = el("div", { class: "charts" });
    root.append(box);
    let gaps = 0;
    for (const c of b.charts) {
      const g = withGaps(b.time, c.series.map((s) => s.values), trends.bucket_s);
      gaps = Math.max(gaps, g.gaps);
      chart(box, c.title, c.unit, g.xs, c.series.map((s, i) => ({ label: s.label, values: g.values[i] })));
      drawn += 1;
    }
    heading.append(el("small", { class: "gaps", "data-gaps": String(gaps) },
      "(" + plural(gaps, "gap") + " in " + plural(b.time.length, "bucket") + ")"));
  }
  document.body.dataset.trendCharts = String(drawn);
  return drawn;
}

let lastAdvice;  // undefined until /v1/dashboard answered

/* The live size of the pool a recommendation is about, from /v1/pools of this broker. */
function liveSize(r) {
  if (!livePools || livePools.brokerId !== r.broker_id) return null;
  if (r.setting === "num.io.threads") return livePools.io ? livePools.io.size : null;
  if (r.setting === "num.network.threads" && r.listener) {
    const p = (livePools.network || {})[r.listener];
    return p ? p.size : null;
  }
  return null;
}

/* What a recommendation's status means now: "applied" only while its size is in force. */
function statusText(r) {
  if (r.status === "applied") {
    const now = liveSize(r);
    if (now === null) return { text: "applied", cls: "applied" };
    if (now === r.recommended) return { text: "applied, in force", cls: "applied" };
    return { text: "applied, since changed to " + now, cls: "changed" };
  }
  if (r.status === "advice") return { text: "advice (for an operator)", cls: "advice" };
  return { text: r.status, cls: r.status };
}

function settingText(r) {
  if (r.action === "scale-out") return "add brokers (scale out)";
  return r.setting + (r.listener ? " (" + r.listener + ")" : "");
}

function sizeText(r, n) {
  if (r.setting === "brokers") return plural(n, "broker");
  if (/threads$/.test(r.setting)) return plural(n, "thread");
  return String(n);
}

/* The evidence that matters, one short line each (the rest is in recommendations.json). */
function evidenceList(ev) {
  const items = [];
  const add = (label, v) => { if (v !== null && v !== undefined) items.push(label + " " + v); };
  add("event loop busy", ev.event_loop_busy_ratio_mean !== undefined ? pct(ev.event_loop_busy_ratio_mean) : undefined);
  add("io idle", ev.io_idle_ratio_mean !== undefined ? pct(ev.io_idle_ratio_mean) : undefined);
  add("queue time", ev.queue_time_ms_mean !== undefined && ev.queue_time_ms_mean !== null ? fmt(ev.queue_time_ms_mean) + " ms" : undefined);
  add("queue trend", ev.queue_time_slope_ms_per_min !== undefined && ev.queue_time_slope_ms_per_min !== null ? fmt(ev.queue_time_slope_ms_per_min) + " ms/min" : undefined);
  if (ev.network_idle_ratio_mean && typeof ev.network_idle_ratio_mean === "object") {
    for (const [l, v] of Object.entries(ev.network_idle_ratio_mean)) add("network " + l + " idle", pct(v));
  } else if (typeof ev.network_idle_ratio_mean === "number") {
    add("network idle", pct(ev.network_idle_ratio_mean));
  }
  if (ev.busiest_requests && ev.busiest_requests.length) add("busiest", ev.busiest_requests.join(", "));
  if (ev.buckets !== undefined) add("over", plural(ev.buckets, "bucket"));
  if (ev.from || ev.to) items.push((ev.from || "") + " .. " + (ev.to || ""));
  return el("ul", { class: "evidence" }, ...items.map((t) => el("li", {}, t)));
}

function renderAdvice(advice) {
  lastAdvice = advice;
  renderVerdicts(advice);
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
    const need = (advice.thresholds || {}).min_buckets;
    const short = (advice.pools || []).filter((a) => a.enough_data === false);
    const holds = (advice.verdicts || []).length;
    const text = short.length
      ? short.map((a) => "Not enough data for broker " + a.broker_id + " " + a.pool + " (need " +
          plural(need, "bucket") + ", have " + a.buckets + ")").join("; ")
      : holds ? "No change recommended: every pool holds, for the reasons above."
      : "No change recommended.";
    body.append(el("tr", {}, el("td", { class: "text empty", colspan: "7" }, text)));
  }
  for (const r of advice.recommendations) {
    const st = statusText(r);
    body.append(el("tr", { class: st.cls, "data-setting": r.setting },
      el("td", { class: "text status" }, st.text), el("td", {}, r.broker_id),
      el("td", { class: "text" }, settingText(r)),
      el("td", {}, sizeText(r, r.current)), el("td", {}, sizeText(r, r.recommended)),
      el("td", { class: "text reason" }, r.reason + (r.note ? " — " + r.note : "")),
      el("td", { class: "text" }, evidenceList(r.evidence || {}))));
  }
  for (const e of advice.effects || []) {
    effects.append(el("li", {}, e.setting + (e.listener ? " (" + e.listener + ")" : "") + " " + e.from + " → " + e.to + " at " + e.at +
      ": queue time " + fmt(e.before.queue_time_ms_mean) + " → " + fmt(e.after.queue_time_ms_mean) +
      " ms, idle " + pct(e.before.idle_ratio_mean) + " → " + pct(e.after.idle_ratio_mean)));
  }
}

/* The clients panel: the top clients by produce latency, their time split against the
   broker's (client queue, wire, broker queue, broker total), in ms; the top clients by the
   bytes the broker counted on their connections, with their own byte counts where they
   push them; and what they report that bears on their settings (no client pushes its
   configuration: the page says so). */
const bytesText = (v) => {
  if (v === null || v === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let x = Number(v);
  let i = 0;
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i += 1; }
  return (i ? x.toFixed(1) : String(Math.round(x))) + " " + units[i];
};
const pair = (a, b, f) => (a === null && b === null ? "not pushed" : f(a) + " / " + f(b));

function clientsTable(id, head, rows) {
  const body = el("tbody", {}, ...rows);
  return el("div", { class: "table-box" }, el("table", { id },
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))), body));
}

function renderClients(c) {
  const view = document.getElementById("clients-view");
  view.replaceChildren();
  const byLatency = (c && c.clients) || [];
  const byBytes = (c && c.by_bytes) || [];
  if (!byLatency.length && !byBytes.length) {
    view.append(el("p", {}, "No client pushed telemetry (a CLIENT_METRICS subscription makes them push)."));
    return;
  }
  const latency = byLatency.map((x) => el("tr", { "data-client": x.client_id },
    el("td", { class: "text" }, x.client_id), el("td", { class: "text" }, x.kind),
    el("td", { class: "text" }, x.software || "-"), el("td", {}, x.pushes),
    el("td", {}, fmt(x.produce_latency_ms, 3)), el("td", {}, fmt(x.record_queue_ms, 3)),
    el("td", {}, fmt(x.wire_ms, 3)), el("td", {}, fmt(x.broker_queue_ms, 3)),
    el("td", {}, fmt(x.broker_total_ms, 3)), el("td", {}, fmt(x.fetch_latency_ms, 3)),
    el("td", {}, fmt(x.commit_latency_ms, 3))));
  view.append(el("h3", {}, "By produce latency"),
    clientsTable("clients-table", ["client id", "kind", "software", "pushes", "produce latency",
      "client queue", "wire", "broker queue", "broker total", "fetch latency", "commit latency"], latency),
    el("p", {}, "ms, means over the last " + c.window_s + " s."));
  const bytes = byBytes.map((x) => el("tr", { "data-bytes-client": x.client_id },
    el("td", { class: "text" }, x.client_id), el("td", { class: "text" }, x.kind || "-"),
    el("td", {}, bytesText(x.broker_bytes_in)), el("td", {}, bytesText(x.broker_bytes_out)),
    el("td", { class: "text" }, pair(x.client_outgoing_bytes, x.client_incoming_bytes, bytesText)),
    el("td", { class: "text" }, pair(x.client_outgoing_byte_rate, x.client_incoming_byte_rate,
      (v) => bytesText(v) + "/s"))));
  view.append(el("h3", {}, "By bytes"),
    clientsTable("clients-bytes-table", ["client id", "kind", "broker bytes in", "broker bytes out",
      "client's own out / in", "client's own rate out / in"], bytes),
    el("p", {}, "Over the last " + c.window_s + " s. " + (c.bytes_note || "") + "."));
  const seen = new Set();
  const settings = [];
  for (const x of [...byLatency, ...byBytes]) {
    if (seen.has(x.client_id)) continue;
    seen.add(x.client_id);
    const r = x.reported || {};
    const batch = r.batch_size_avg === null || r.batch_size_avg === undefined ? "not pushed"
      : bytesText(r.batch_size_avg) + " (max " + bytesText(r.batch_size_max) + ")";
    settings.push(el("tr", { "data-settings-client": x.client_id },
      el("td", { class: "text" }, x.client_id), el("td", { class: "text" }, x.software || "-"),
      el("td", {}, r.push_interval_ms === null || r.push_interval_ms === undefined ? "–" : r.push_interval_ms + " ms"),
      el("td", { class: "text" }, batch),
      el("td", { class: "text" }, r.in_flight_avg === null || r.in_flight_avg === undefined ? "not pushed" : fmt(r.in_flight_avg)),
      el("td", { class: "text" }, r.buffer_total_bytes === null || r.buffer_total_bytes === undefined ? "not pushed" : bytesText(r.buffer_total_bytes))));
  }
  view.append(el("h3", {}, "Settings as reported"),
    clientsTable("clients-settings-table", ["client id", "software", "push interval",
      "batch.size.avg (max)", "requests.in.flight", "buffer.total.bytes"], settings),
    el("p", { id: "clients-not-reported" }, (c.not_reported || c.not_pushed || "") + "."));
}

async function pollTrends() {
  try {
    const d = await api("/v1/dashboard");
    renderTrends(d.trends);
    renderAdvice(d.recommendations);
    renderCluster(d.trends ? d.trends.cluster : null, d.balance);
    renderClients(d.trends ? d.trends.clients : null);
    if (d.problems && d.problems.length) setStatus(d.problems.join("; "));
    markReady("trends");
  } catch (e) {
    if (e instanceof TokenNeeded) { showTokenNeeded(e.message); return; }
    setStatus("trends: " + e.message);
  }
  setTimeout(pollTrends, TRENDS_EVERY_MS);
}

function setStatus(problem) {
  if (document.body.dataset.state === "token-needed") return;
  const s = document.getElementById("status");
  s.textContent = problem || "live, updated " + new Date().toLocaleTimeString();
}

/* Whether the page fits its window (no sideways scrolling), for the page's tests. */
function measure() {
  document.body.dataset.scrollWidth = String(document.documentElement.scrollWidth);
  document.body.dataset.viewportWidth = String(document.documentElement.clientWidth);
  const boxes = [...document.querySelectorAll(".table-box")];
  document.body.dataset.tablesCut = String(boxes.filter((b) => b.scrollWidth > b.clientWidth + 1).length);
}
const observer = new MutationObserver(measure);
observer.observe(document.getElementById("main"), { childList: true, subtree: true });

pollLive();
pollTrends();
