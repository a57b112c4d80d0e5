/* trio-broker dashboard: the cluster view (brokers by load, the hottest partitions, the
 * last balance plan, its state and its measured effect) and the advisor's verdict for
 * every pool. Loaded before dashboard.js, which calls renderCluster(trends.cluster,
 * balance) and renderVerdicts(advice) with what /v1/dashboard returns, and whose helpers
 * (el, fmt, pct, plural) these functions use when they run.
 * Rows carry data-broker / data-partition / data-move / data-pool attributes for tests. */
"use strict";

/* 1234567 -> "1.2 MB": decimal units, as Kafka's byte rates are usually read. */
function bytes(v) {
  if (v === null || v === undefined) return "–";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  let x = Number(v);
  while (Math.abs(x) >= 1000 && i < units.length - 1) { x /= 1000; i++; }
  return (i === 0 ? x.toFixed(0) : x.toFixed(1)) + " " + units[i];
}

function isoTime(epoch) {
  return new Date(epoch * 1000).toISOString().replace(".000Z", "Z");
}

function table(id, headers, rows, widths) {
  const cols = widths ? [el("colgroup", {}, ...widths.map((w) => el("col", { style: "width: " + w + "%" })))] : [];
  return el("div", { class: "table-box" }, el("table", { id }, ...cols,
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows)));
}

function empty(text) {
  return el("p", { class: "empty" }, text);
}

/* ----------------------------------------------------------- verdicts */

function renderVerdicts(advice) {
  const box = document.getElementById("verdicts-box");
  box.replaceChildren();
  const verdicts = (advice && advice.verdicts) || [];
  if (!verdicts.length) return;
  const rows = verdicts.map((v) => {
    const size = v.proposed === null || v.proposed === undefined
      ? plural(v.current, "thread") : v.current + " → " + plural(v.proposed, "thread");
    const word = v.verdict === "hold" ? "hold (" + v.because + ")" : v.verdict;
    return el("tr", { class: "verdict-" + v.verdict, "data-pool": v.broker_id + "/" + v.pool },
      el("td", {}, v.broker_id),
      el("td", { class: "text" }, v.setting + (v.listener ? " (" + v.listener + ")" : "")),
      el("td", { class: "text verdict" }, word), el("td", {}, size),
      el("td", { class: "text" }, el("ul", { class: "evidence" },
        ...v.reasons.map((r) => el("li", {}, r.text)))));
  });
  box.append(el("h3", {}, "Each pool's verdict ", el("small", {}, "(and the comparisons that decided it)")),
    table("verdicts", ["broker", "pool", "verdict", "size", "why"], rows, [7, 20, 14, 12, 47]));
}

/* ------------------------------------------------------------ cluster */

function renderCluster(cluster, balance) {
  const root = document.getElementById("cluster-view");
  root.replaceChildren();
  root.append(...clusterLoad(cluster), ...balancePlan(balance));
}

function clusterLoad(cluster) {
  if (!cluster || !cluster.brokers || !cluster.brokers.length) {
    return [empty("No brokers table yet: scrape every broker (spark_jobs.scrape --cluster) " +
      "and run the trends job; its brokers and partitions tables feed this view.")];
  }
  const out = [];
  const span = "(" + isoTime(cluster.from) + " .. " + isoTime(cluster.to) + ", means over " +
    Math.round(cluster.window_s / 60) + " min; counts and disk at the newest bucket)";
  out.push(el("h3", {}, "Brokers by load ", el("small", {}, "busiest event loop first " + span)));
  if (cluster.brokers.length === 1) {
    out.push(el("p", { class: "empty", id: "one-broker" },
      "One broker in the tables: there is nothing to balance between brokers."));
  }
  out.push(table("cluster-brokers",
    ["broker", "event loop busy", "io idle", "network idle", "bytes in/s", "bytes out/s",
      "leaders", "replicas", "disk used"],
    cluster.brokers.map((b) => el("tr", { "data-broker": String(b.broker_id) },
      el("td", {}, b.broker_id + (b.rack ? " (" + b.rack + ")" : "")),
      el("td", {}, pct(b.loop_busy_ratio)), el("td", {}, pct(b.io_idle_ratio)),
      el("td", {}, pct(b.network_idle_ratio)),
      el("td", { "data-value": String(b.bytes_in_per_s) }, bytes(b.bytes_in_per_s)),
      el("td", { "data-value": String(b.bytes_out_per_s) }, bytes(b.bytes_out_per_s)),
      el("td", {}, b.leaders ?? "–"), el("td", {}, b.replicas ?? "–"),
      el("td", {}, bytes(b.disk_used_bytes) + (b.disk_total_bytes ? " of " + bytes(b.disk_total_bytes) : ""))))));
  out.push(el("h3", {}, "Hottest partitions ", el("small", {}, "(bytes in + out per second at the leader; " +
    cluster.partitions.length + " of " + cluster.partitions_total + ")")));
  if (!cluster.partitions.length) {
    out.push(empty("No partition led in the window."));
  } else {
    out.push(table("hot-partitions",
      ["partition", "leader", "replicas", "bytes in/s", "bytes out/s", "messages in/s", "log size"],
      cluster.partitions.map((p) => el("tr", { "data-partition": p.topic + "-" + p.partition },
        el("td", { class: "text" }, p.topic + "-" + p.partition), el("td", {}, p.leader ?? "–"),
        el("td", { class: "text" }, (p.replicas || []).join(", ")),
        el("td", { "data-value": String(p.bytes_in_per_s) }, bytes(p.bytes_in_per_s)),
        el("td", { "data-value": String(p.bytes_out_per_s) }, bytes(p.bytes_out_per_s)),
        el("td", {}, fmt(p.messages_in_per_s, 1)), el("td", {}, bytes(p.log_size_bytes))))));
  }
  return out;
}

/* What the plan's execution says now: not applied, under way, or how it ended. */
function planState(plan) {
  const x = plan.execution;
  if (!x) return "planned, not applied (python -m spark_jobs.balance ... --apply)";
  const counts = {};
  for (const m of x.moves || []) counts[m.status] = (counts[m.status] || 0) + 1;
  const moves = Object.entries(counts).map(([s, n]) => n + " " + s).join(", ");
  const head = x.status === "running" ? "applying since " + x.started_at
    : x.status + " (" + x.started_at + " .. " + (x.finished_at || "") + ")";
  return head + (x.reason ? ": " + x.reason : "") + (moves ? "; moves: " + moves : "");
}

function balancePlan(plan) {
  const out = [el("h3", {}, "Last balance plan")];
  if (!plan) {
    out.push(empty("No balance plan yet: run python -m spark_jobs.balance --in <dashboard.data.dir> balance."));
    return out;
  }
  const s = plan.summary || {};
  out.push(el("p", { id: "plan-summary" }, plan.command + (plan.brokers_named && plan.brokers_named.length
    ? " " + plan.brokers_named.join(",") : "") + ", generated " + plan.generated_at + ": " +
    plural(s.replica_moves ?? 0, "replica move") + ", " + plural(s.leadership_moves ?? 0, "leadership move") +
    ", " + plural(s.elections ?? 0, "election") + ", " + bytes(s.bytes_to_copy ?? 0) + " to copy" +
    ((plan.unmet_goals || []).length ? "; cannot meet: " + plan.unmet_goals.join(", ") : "")));
  out.push(el("p", { id: "plan-state" }, "State: " + planState(plan)));
  const done = {};
  for (const m of (plan.execution && plan.execution.moves) || []) done[m.topic + "-" + m.partition] = m;
  if (!(plan.moves || []).length) {
    out.push(empty("The plan moves nothing: the goals are met as the cluster is."));
  } else {
    out.push(table("balance-moves", ["partition", "replicas", "leader", "state", "why"],
      plan.moves.map((m) => {
        const key = m.topic + "-" + m.partition;
        const x = done[key];
        return el("tr", { "data-move": key },
          el("td", { class: "text" }, key),
          el("td", { class: "text" }, m.replicas_before.join(", ") + " → " + m.replicas_after.join(", ")),
          el("td", {}, m.leader_before + " → " + m.leader_after),
          el("td", { class: "text move-state" }, x ? x.status + (x.note ? ": " + x.note : "") : plan.execution ? "–" : "planned"),
          el("td", { class: "text" }, m.reasons[0] + (m.reasons.length > 1 ? " (+" + (m.reasons.length - 1) + " more)" : "")));
      }), [12, 16, 9, 18, 45]));
  }
  out.push(...effects(plan));
  return out;
}

/* A function: pct comes from dashboard.js, loaded after this file. */
const effectFigures = () => [["loop_busy_ratio", "event loop busy", pct], ["io_idle_ratio", "io idle", pct],
  ["bytes_in_per_s", "bytes in/s", bytes], ["bytes_out_per_s", "bytes out/s", bytes],
  ["leaders", "leaders", String], ["replicas", "replicas", String]];

function effectTable(id, sides) {
  const figures = effectFigures();
  return table(id, ["broker", ...figures.map((f) => f[1])],
    Object.keys(sides).sort((a, b) => a - b).map((b) => el("tr", { "data-broker": b },
      el("td", {}, b),
      ...figures.map(([k, , f]) => {
        const x = sides[b].before[k], y = sides[b].after[k];
        const show = (v) => (v === null || v === undefined ? "–" : f(v));
        return el("td", {}, show(x) + " → " + show(y));
      }))));
}

function effects(plan) {
  const out = [el("h3", {}, "Measured effect")];
  const x = plan.execution;
  let any = false;
  if (x && x.before && x.after) {
    const sides = {};
    for (const b of new Set([...Object.keys(x.before), ...Object.keys(x.after)])) {
      sides[b] = { before: x.before[b] || {}, after: x.after[b] || {} };
    }
    out.push(el("p", {}, "This plan, measured live by the executor before and after its moves:"),
      effectTable("effect-live", sides));
    any = true;
  }
  const e = plan.last_effect;
  if (e) {
    out.push(el("p", {}, "The plan applied " + e.execution_started_at + " .. " + e.execution_finished_at +
      " (" + e.status + "), from the brokers table: each broker's mean over the buckets before and after it:"),
      effectTable("effect-tables", e.brokers));
    any = true;
  }
  if (!any) {
    out.push(empty("No measured effect yet: a plan applied with --apply is measured before and " +
      "after its moves, and the next plan reports what the brokers table shows."));
  }
  return out;
}
