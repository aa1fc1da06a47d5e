// LLM charts of a Locust run: polls /llm/charts.json every 2 s and draws the selected series with uPlot.
// `window.llmCharts` holds the last feed and the number of points drawn (the browser test reads it).
"use strict";

const POLL_MS = 2000;
const COLORS = ["#178038", "#f57c00", "#1e88e5", "#e53935", "#8e24aa", "#00897b", "#c0ca33", "#6d4c41"];
const charts = {};
window.llmCharts = { feed: null, points: 0, polls: 0 };

function el(id) {
  return document.getElementById(id);
}

function text(tag, value, cls) {
  const node = document.createElement(tag);
  node.textContent = value === null || value === undefined ? "-" : String(value);
  if (cls) node.className = cls;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  cells.forEach((c) => tr.appendChild(c));
  return tr;
}

function fill(tableId, rows) {
  const body = el(tableId).querySelector("tbody");
  body.replaceChildren(...rows);
}

// A node's verdict with its cause: "machine busy" calls for a quieter machine, not more workers (docs/metrics.md).
function clientVerdict(c) {
  if (!c.saturated) return "ok";
  return c.cause ? `SATURATED (${c.cause.replace("_", " ")})` : "SATURATED";
}

// The start-up and stop samples the verdict left out of its measured window, with their worst lag.
function leftOut(c) {
  const excluded = Object.entries((c.window && c.window.excluded) || {}).filter(([, e]) => e.samples);
  if (!excluded.length) return [];
  const parts = excluded.map(([part, e]) =>
    `${part === "startup" ? "start-up" : part} ${e.samples} (worst lag ${Number(e.lag_max_ms).toFixed(1)} ms)`);
  return [`judged over the measured window; left out: ${parts.join(", ")}`];
}

function plot(id, names, data) {
  const node = el(id);
  const key = names.join("|");
  const width = Math.max(node.clientWidth, 300);
  if (!charts[id] || charts[id].key !== key) {
    if (charts[id]) charts[id].chart.destroy();
    const series = [{}, ...names.map((n, i) => ({ label: n, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true }))];
    const axis = { stroke: "#616161", grid: { stroke: "#eeeeee" }, ticks: { stroke: "#e0e0e0" } };
    const opts = { width, height: 220, series, axes: [axis, axis], scales: { x: { time: true } } };
    charts[id] = { key, chart: new uPlot(opts, data, node) };
  } else {
    charts[id].chart.setData(data);
  }
}

function drawSeries(columns) {
  const t = columns.t;
  plot("chart-ttft", ["TTFT p50", "TTFT p95"], [t, columns.ttft_p50, columns.ttft_p95]);
  plot("chart-tpot", ["TPOT p50"], [t, columns.tpot_p50]);
  plot("chart-tokens", ["output tokens/s"], [t, columns.tokens_per_s]);
  const classes = Object.keys(columns.errors);
  const errors = classes.length ? classes.map((c) => columns.errors[c]) : [t.map(() => 0)];
  plot("chart-errors", classes.length ? classes : ["no errors"], [t, ...errors]);
  plot("chart-users", ["users"], [t, columns.users]);
  window.llmCharts.points = t.length;
}

function chooser(names) {
  const select = el("series");
  const current = select.value || "Aggregated";
  if ([...select.options].map((o) => o.value).join("|") !== names.join("|")) {
    select.replaceChildren(...names.map((n) => text("option", n)));
  }
  select.value = names.includes(current) ? current : names[0];
  return select.value;
}

function drawVerdicts(feed) {
  const v = feed.verdict;
  const box = el("verdict");
  const state = `run ${feed.run_id || "-"}: ${feed.state || "-"}, ${feed.users} users`;
  box.textContent = v ? `${state}. Verdict: ${v.status.toUpperCase()} (exit ${v.exit_code})` : `${state}.`;
  if (v && v.reasons && v.reasons.length) box.textContent += `: ${v.reasons.join("; ")}`;
  box.className = "verdict " + (v ? v.status : "muted");
  fill("thresholds", feed.thresholds.map((t) => {
    const result = t.passed === true ? "pass" : t.passed === false ? "fail" : "n/a";
    return row([text("td", result, t.passed === null ? "na" : result), text("td", t.expression),
      text("td", t.reason), text("td", t.origin || "--llm-threshold")]);
  }));
  fill("clients", Object.entries(feed.clients).map(([worker, c]) => row([text("td", worker),
    text("td", clientVerdict(c), c.saturated ? "fail" : "pass"), text("td", c.loop_lag_p99_ms),
    text("td", c.cpu_p90_percent), text("td", (c.reasons || []).concat(c.warnings || [], leftOut(c)).join("; "))])));
  el("lines").textContent = feed.lines.join("\n");
}

async function poll() {
  try {
    const response = await fetch("/llm/charts.json", { cache: "no-store" });
    if (response.ok) {
      const feed = await response.json();
      window.llmCharts.feed = feed;
      el("run").textContent = feed.run_id ? `run ${feed.run_id}` : "";
      const link = el("grafana");
      link.hidden = !feed.grafana;
      if (feed.grafana) link.href = feed.grafana;
      const names = Object.keys(feed.timeline.series);
      if (names.length) drawSeries(feed.timeline.series[chooser(names)]);
      drawVerdicts(feed);
    } else if (response.status === 401 || response.redirected) {
      window.location = "/login";
    }
  } finally {
    window.llmCharts.polls += 1;
    setTimeout(poll, POLL_MS);
  }
}

el("series").addEventListener("change", () => {
  const feed = window.llmCharts.feed;
  if (feed) drawSeries(feed.timeline.series[el("series").value]);
});
poll();
