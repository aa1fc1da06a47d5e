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

// The value axis starts at 0 (latency, rates, counts) and ends at a round number a little above the highest point,
// so a steady 10 ms TPOT that wobbles by 0.01 ms draws as the flat line it is, not as deep dips across the chart.
function fromZero(u, min, max) {
  if (!(max > 0)) return [0, 1];
  const power = 10 ** Math.floor(Math.log10(max));
  const step = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find((m) => m * power >= max * 1.05);
  return [0, step * power];
}

// The value axis is as wide as its longest tick label (uPlot's fixed 50 px cut "10.005" to "0.005").
function axisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  u.ctx.font = axis.font[0];
  const ratio = uPlot.pxRatio || window.devicePixelRatio || 1;
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / ratio) + 4;
}

// The time axis: whole seconds to hours between ticks, 80 px apart at least, each labelled with the time of day
// (uPlot's own put the date under the first tick, cut off at the chart's left edge).
const TIME_AXIS = {
  space: 80,
  incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400],
  values: (u, splits) => splits.map((t) => new Date(t * 1000).toTimeString().slice(0, 8)),
};

function fmt(v) {
  if (v === null || v === undefined) return "-";
  if (Number.isInteger(v)) return String(v);
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return v.toFixed(digits);
}

// Each series' last point with a value: what the legend shows while the pointer is not over the chart.
function latest(u) {
  return u.data.map((values) => {
    for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null && values[i] !== undefined) return i;
    return null;
  });
}

function showLatest(u) {
  if (u.cursor.idx === null || u.cursor.idx === undefined) u.setLegend({ idxs: latest(u) });
}

function plot(id, names, data) {
  const node = el(id);
  const key = names.join("|");
  const width = Math.max(node.clientWidth, 300);
  if (!charts[id] || charts[id].key !== key) {
    if (charts[id]) charts[id].chart.destroy();
    const series = [{ value: "{HH}:{mm}:{ss}" }, ...names.map((n, i) =>
      ({ label: n, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true, value: (u, v) => fmt(v) }))];
    const axis = { stroke: "#616161", grid: { stroke: "#eeeeee" }, ticks: { stroke: "#e0e0e0" } };
    const opts = {
      width, height: 220, series, padding: [8, 28, 0, 0],
      axes: [{ ...axis, ...TIME_AXIS }, { ...axis, size: axisSize }],
      scales: { x: { time: true }, y: { range: fromZero } },
      hooks: { ready: [showLatest], setData: [showLatest], setCursor: [showLatest] },
    };
    charts[id] = { key, chart: new uPlot(opts, data, node) };
  } else {
    charts[id].chart.setData(data);
  }
}

// For the browser test: the value axis of a chart as drawn (its range, width, tick labels and their widest text).
window.llmCharts.yAxis = (id) => {
  const u = charts[id].chart;
  const axis = u.axes[1];
  u.ctx.font = axis.font[0];
  const ratio = uPlot.pxRatio || window.devicePixelRatio || 1;
  const widest = Math.max(0, ...(axis._values || []).map((v) => u.ctx.measureText(String(v)).width / ratio));
  return { min: u.scales.y.min, max: u.scales.y.max, size: axis._size, room: axis._size - axis.ticks.size - axis.gap,
    labels: axis._values, widest };
};

function drawSeries(columns) {
  const t = columns.t;
  plot("chart-ttft", ["TTFT p50", "TTFT p95"], [t, columns.ttft_p50, columns.ttft_p95]);
  plot("chart-tpot", ["TPOT p50"], [t, columns.tpot_p50]);
  plot("chart-tokens", ["output tokens/s"], [t, columns.tokens_per_s]);
  // An interval a master still waits for reports on has its counts so far: no point for it (docs/webui.md).
  const done = (values) => values.map((v, i) => (columns.complete && !columns.complete[i] ? null : v));
  const classes = Object.keys(columns.errors);
  const errors = classes.length ? classes.map((c) => done(columns.errors[c])) : [done(t.map(() => 0))];
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
    text("td", clientVerdict(c), c.saturated ? "fail" : "pass"), text("td", fmt(c.loop_lag_p99_ms)),
    text("td", fmt(c.cpu_p90_percent)),
    text("td", (c.reasons || []).concat(c.warnings || [], leftOut(c)).join("; "))])));
  el("lines").textContent = feed.lines.join("\n");
}

// The scenario tables (what busts the cache, structured-output amplification) as the server rendered them, every
// value escaped there; replaced only when they change, so a selection in them survives the polls.
let tablesHtml = "";
function drawTables(tables) {
  const html = tables.join("");
  if (html === tablesHtml) return;
  tablesHtml = html;
  el("scenario-tables").innerHTML = html;
  el("scenario-tables").hidden = !tables.length;
}

// A step's load: its users, or its arrival rate in a rate search.
function load(step) {
  return step.users !== undefined && step.users !== null ? step.users : step.rate_per_s;
}

// The server's queue, batch and KV-cache use over the step's window (with --llm-server-metrics), or "-".
function serverCell(server) {
  if (!server) return "-";
  const mean = (f, scale) => (f ? fmt(f.mean * (scale || 1)) : "-");
  return `${mean(server.waiting)} / ${mean(server.running)} / ${server.kv_cache ? mean(server.kv_cache, 100) + " %" : "-"}`;
}

// The drain before a rate step that followed a failed one (its wait, and whether the queue drained), or "-".
function drainCell(step) {
  if (step.drain_s === null || step.drain_s === undefined) return "-";
  return `${step.drain_s.toFixed(1)} s${step.drained ? "" : ", not drained"}`;
}

// Ticks of the load axis: whole users (or round rates), never 8.5 users.
const LOAD_INCRS = [1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000];

// The capacity search's finished steps by load: TTFT p95 as a line through every step, the failing steps again as
// red rings, requests/s on its own axis; `window.llmCharts.capacity` says what was drawn (the browser test reads it).
function drawCapacity(capacity) {
  const section = el("capacity");
  section.hidden = !capacity;
  if (!capacity) return;
  const steps = [...capacity.steps].sort((a, b) => load(a) - load(b));
  const x = steps.map(load);
  const ttft = steps.map((s) => s.ttft_ms.p95);
  const failed = steps.map((s) => (s.passed ? null : s.ttft_ms.p95 === null ? 0 : s.ttft_ms.p95));
  const rps = steps.map((s) => s.requests_per_s);
  const data = [x, ttft, failed, rps];
  const unit = capacity.mode === "rate" ? "requests/s offered" : "users";
  if (!charts.capacity || charts.capacity.unit !== unit) {
    if (charts.capacity) charts.capacity.chart.destroy();
    const axis = { stroke: "#616161", grid: { stroke: "#eeeeee" }, ticks: { stroke: "#e0e0e0" } };
    const node = el("chart-capacity");
    const opts = {
      width: Math.max(node.clientWidth, 300), height: 260, padding: [8, 8, 0, 0],
      scales: { x: { time: false }, y: { range: fromZero }, rps: { range: fromZero } },
      series: [{ label: unit, value: (u, v) => fmt(v) },
        { label: "TTFT p95 (ms)", stroke: COLORS[0], width: 2, points: { show: true, size: 8 }, value: (u, v) => fmt(v) },
        { label: "failing step", stroke: "#c62828", width: 0, paths: () => null,
          points: { show: true, size: 16, width: 3, stroke: "#c62828", fill: "rgba(0,0,0,0)" }, value: (u, v) => fmt(v) },
        { label: "requests/s", stroke: COLORS[2], width: 2, dash: [6, 4], scale: "rps", points: { show: true, size: 6 },
          value: (u, v) => fmt(v) }],
      hooks: { ready: [showLatest], setData: [showLatest], setCursor: [showLatest] },
      axes: [{ ...axis, label: unit, space: 50, incrs: LOAD_INCRS }, { ...axis, size: axisSize }, { ...axis, scale: "rps", side: 1, size: axisSize,
        grid: { show: false } }],
    };
    charts.capacity = { unit, chart: new uPlot(opts, data, node) };
  } else {
    charts.capacity.chart.setData(data);
  }
  const drawn = charts.capacity.chart.data;
  window.llmCharts.capacity = {
    steps: drawn[0].length,
    loads: [...drawn[0]],
    failed: drawn[0].filter((_, i) => drawn[2][i] !== null && drawn[2][i] !== undefined),
  };
  el("capacity-answer").textContent = capacity.answer || "";
  fill("capacity-steps", capacity.steps.map((s) => row([text("td", s.step), text("td", load(s)),
    text("td", s.passed ? "held" : "FAIL", s.passed ? "pass" : "fail"), text("td", fmt(s.requests_per_s)),
    text("td", fmt(s.output_tokens_per_s)), text("td", `${fmt(s.ttft_ms.p50)} / ${fmt(s.ttft_ms.p95)}`),
    text("td", fmt(s.e2e_ms.p95)), text("td", s.errors), text("td", drainCell(s)), text("td", serverCell(s.server)),
    text("td", (s.failed || []).join("; ") || (s.client_reason || ""))])));
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
      drawTables(feed.tables);
      drawCapacity(feed.capacity);
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
