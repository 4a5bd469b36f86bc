#!/usr/bin/env node
/**
 * The bench's headline figures, drawn from its own results: reads bench/results/latest.json and writes
 *
 * - bench/results/latest.svg: the headline figures as horizontal bars (self-contained SVG: no fonts,
 *   scripts or links; a white card with explicit colours, so it reads alike on GitHub's light and dark
 *   themes);
 * - bench/results/headline.md: the head of README's Performance section: a short table of the headline
 *   figures, the chart, and every figure of the run folded in a <details> block (the same report
 *   bench/run.mjs prints, from bench/report.mjs).
 *
 * bench/run.mjs calls it at the end of `npm run bench`; alone: `node bench/chart.mjs [latest.json] [out dir]`.
 * Plain string building, no dependency, no build needed.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  PREVIEW_ADDED_GOAL_MS,
  benchNotes,
  benchTable,
  markdownTable,
  previewRows,
  previewsOf,
  replicasTable,
} from "./report.mjs";
import { END, START } from "../scripts/readme-bench.mjs";

// The markers around the headline block, where the page writer keeps them.
export { END, START };

const OURS = "generation-mcp";
/** Where docs/performance.md finds the chart (headline.md is pasted there, one folder below the root). */
export const SVG_PATH = "../bench/results/latest.svg";

const fixed = (v, digits) => (Number.isFinite(v) ? v.toFixed(digits) : "n/a");
const ms = (v) => `${fixed(v, v < 10 ? 2 : 1)} ms`;
const times = (v) => `${fixed(v, 2)}x`;
const int = (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString("en") : "n/a");
const peerLabel = (name) => name.replace(/^@modelcontextprotocol\//, "");

/** The row of the run's table (latest.json `table`) for a section and a metric prefix: its goal and met. */
function goalOf(output, section, metricStart) {
  const row = (output.table ?? []).find((r) => r.section === section && r.metric.startsWith(metricStart));
  return { goal: row?.goal ?? "", met: row?.met ?? "" };
}
/** "< 1 ms" -> 1: where a goal line goes on a bar. */
const goalNumber = (goal) => {
  const m = /([\d.]+)/.exec(goal);
  return m ? Number(m[1]) : undefined;
};
/** A bar's goal line: where it goes and its label ("< 1 ms"); nothing without a goal. */
const goalBar = (goal) => (goalNumber(goal) === undefined ? {} : { goal: goalNumber(goal), goalLabel: goal });

/**
 * The headline figures of a results file: `sections` for the chart (bars sharing a unit) and `rows` for
 * the Markdown table. A section the file lacks is left out of the table and shown as "not measured" in
 * the chart.
 */
export function headlines(output) {
  const r = output.results ?? {};
  const sections = [];
  const rows = [];

  // --- cold start: ours against the minimal SDK server, the peers and the bare-node floor ---------------
  const cs = r.coldStart;
  if (cs !== undefined) {
    const names = Object.keys(cs.targets);
    // The reference of the goal: marked in the results (v2 line on), else the one minimal server there was.
    const sdk =
      names.find((n) => cs.targets[n].reference) ?? names.find((n) => n.startsWith("minimal MCP SDK server"));
    const v2 = cs.targets[sdk ?? ""]?.reference === true;
    const floor = names.find((n) => n.startsWith("bare node"));
    const peers = names.filter((n) => cs.targets[n].peer);
    const oursMs = cs.targets[OURS].ms.median;
    const ratio = (key) => cs.ratios[`${OURS} / ${key}`]?.median;
    const bars = [{ label: OURS, value: oursMs, text: ms(oursMs), ours: true }];
    if (sdk !== undefined) {
      const x = ratio("minimal SDK server");
      bars.push({
        label: `minimal MCP SDK server${v2 ? " (v2)" : ""}`,
        value: cs.targets[sdk].ms.median,
        text: ms(cs.targets[sdk].ms.median),
        note: `ours: ${times(x)} this`,
      });
      const { goal, met } = goalOf(output, "cold start ratio", `${OURS} / minimal SDK`);
      rows.push({
        figure: v2
          ? "Cold start against the smallest MCP SDK v2 server (`Server` + `StdioServerTransport`), bundled alike (spawn → `tools/list` answered)"
          : "Cold start against the smallest MCP SDK server, bundled alike (spawn → `tools/list` answered)",
        value: `**${times(x)}** (${ms(oursMs)} against ${ms(cs.targets[sdk].ms.median)})`,
        goal,
        met,
      });
    }
    for (const peer of peers) {
      bars.push({
        label: peerLabel(peer),
        value: cs.targets[peer].ms.median,
        text: ms(cs.targets[peer].ms.median),
        note: `ours: ${times(ratio(peer))} this`,
      });
    }
    if (peers.length > 0) {
      // The goal is per peer, or (v2 line on) against the fastest peer only.
      const goals = peers.map((peer) => goalOf(output, "cold start ratio", `${OURS} / ${peer}`));
      const judged = goals.filter((g) => g.goal !== "");
      const fastest =
        cs.fastestPeer === undefined
          ? ""
          : ` the fastest, \`${peerLabel(cs.fastestPeer).replace(/@.*/, "")}\``;
      rows.push({
        figure: `Cold start against the peers (${peers.map((p) => `\`${peerLabel(p).replace(/@.*/, "")}\``).join(", ")})`,
        value: `${peers.map((p) => `**${times(ratio(p))}**`).join(", ")} (${ms(oursMs)} against ${peers.map((p) => ms(cs.targets[p].ms.median)).join(", ")})`,
        goal:
          judged.length === 0
            ? ""
            : judged.length === peers.length
              ? `${judged[0].goal} each`
              : `${judged[0].goal} against${fastest}`,
        met: judged.length === 0 ? "" : judged.every((g) => g.met === "yes") ? "yes" : "NO",
      });
    }
    if (floor !== undefined) {
      const x = ratio("bare node");
      bars.push({
        label: "bare node -e (floor)",
        value: cs.targets[floor].ms.median,
        text: ms(cs.targets[floor].ms.median),
        note: `ours: ${times(x)} this`,
        reference: true,
      });
      const { goal, met } = goalOf(output, "cold start ratio", `${OURS} / bare node`);
      rows.push({
        figure: "Cold start against the floor: a bare `node -e` doing the same exchange",
        value: `**${times(x)}** (${ms(oursMs)} against ${ms(cs.targets[floor].ms.median)})`,
        goal,
        met,
      });
    }
    sections.push({
      title: "Cold start, ms",
      subtitle: "spawn → tools/list answered · lower is better",
      bars,
    });
  }

  // --- added latency per call over a direct GET of the same endpoint -----------------------------------
  const co = r.callOverhead;
  const ho = r.httpOverhead;
  if (co !== undefined || ho !== undefined) {
    const bars = [];
    if (co !== undefined) {
      const { goal, met } = goalOf(output, "get_credits", "added latency p50");
      const v = co.addedP50Ms.median;
      bars.push({ label: "stdio", value: v, text: ms(v), ours: true, ...goalBar(goal) });
      rows.push({
        figure: "Added latency per call over stdio, p50 (MCP call − direct HTTP GET of the same endpoint)",
        value: `**${ms(v)}**`,
        goal,
        met,
      });
    }
    if (ho?.http2025 !== undefined) {
      // Raw clients: the server's own added latency, with the goal; the SDK client's figure adds its own cost.
      const added = (name) => ho[name].addedP50Ms.median;
      const judged = [];
      for (const [name, label, revision] of [
        ["http2025", "HTTP 2025-11-25, raw client", "raw 2025-11-25 client"],
        ["http2026", "HTTP 2026-07-28, raw client", "raw 2026-07-28 client"],
      ]) {
        const { goal, met } = goalOf(
          output,
          "get_credits HTTP",
          `HTTP added latency p50 (MCP - direct GET), ours, ${revision}`,
        );
        judged.push({ goal, met });
        bars.push({ label, value: added(name), text: ms(added(name)), ours: true, ...goalBar(goal) });
      }
      bars.push({ label: "HTTP, SDK v1 client", value: added("http"), text: ms(added("http")), ours: true });
      bars.push({
        label: "minimal SDK v2 proxy, 2026",
        value: added("ref2026"),
        text: ms(added("ref2026")),
        note: `2025-11-25: ${ms(added("ref2025"))}`,
      });
      bars.push({
        label: "bare node:http proxy (floor)",
        value: added("floor"),
        text: ms(added("floor")),
        reference: true,
      });
      rows.push({
        figure:
          "Added latency per call over Streamable HTTP, p50, raw clients (same rounds as the stdio and direct calls)",
        value: `**${ms(added("http2025"))}** (2025-11-25), **${ms(added("http2026"))}** (2026-07-28); the minimal SDK v2 proxy ${ms(added("ref2025"))}, ${ms(added("ref2026"))}; a bare node:http proxy ${ms(added("floor"))}; with the SDK v1 client ${ms(added("http"))}`,
        goal: judged[0].goal ? `${judged[0].goal} each` : "",
        met: judged.every((g) => g.met === "yes") ? "yes" : "NO",
      });
    } else if (ho !== undefined) {
      const { goal, met } = goalOf(output, "get_credits HTTP", "HTTP added latency p50");
      const v = ho.httpAddedP50Ms.median;
      bars.push({
        label: "Streamable HTTP",
        value: v,
        text: ms(v),
        ours: true,
        ...goalBar(goal),
      });
      rows.push({
        figure:
          "Added latency per call over Streamable HTTP, p50 (same rounds as the stdio and direct calls)",
        value: `**${ms(v)}**`,
        goal,
        met,
      });
    }
    sections.push({
      title: "Added latency per call, p50, ms",
      subtitle: "get_credits through MCP − a direct HTTP GET · lower is better",
      bars,
    });
  }

  // --- HTTP calls/s at N clients: ours against the minimal SDK v2 proxy, the floor and the direct GET -------
  if (ho?.ratios !== undefined && ho.http2025 !== undefined) {
    const key = Object.keys(ho.http2025).find((k) => /^callsPerS\d+$/.test(k) && k !== "callsPerS1");
    const clients = key?.replace("callsPerS", "") ?? "";
    const rate = (name) => ho[name][key].median;
    const bar = (name, label, extra = {}) => ({ label, value: rate(name), text: int(rate(name)), ...extra });
    const ratioOf = (client) => ho.ratios[`ours / minimal SDK, ${client}, calls/s at ${clients}`]?.median;
    const clientKinds = [
      ["raw 2025-11-25", "http2025", "ref2025"],
      ["raw 2026-07-28", "http2026", "ref2026"],
      ["SDK client 2025-11-25", "http", "ref"],
    ];
    const bars = [];
    const clientLabel = (client) =>
      client.startsWith("raw") ? `${client} client` : client.replace("SDK client ", "SDK v1 client (") + ")";
    for (const [client, ours, ref] of clientKinds) {
      const label = client.startsWith("raw") ? client : "SDK v1 client";
      bars.push(
        bar(ours, `ours, ${label}`, { ours: true, note: `${times(ratioOf(client))} the minimal SDK proxy` }),
      );
      bars.push(bar(ref, `minimal SDK v2 proxy, ${label}`));
    }
    bars.push(bar("floor", "bare node:http proxy (floor)", { reference: true }));
    bars.push(bar("direct", "direct GET of the service", { reference: true }));
    sections.push({
      title: `Streamable HTTP calls/s, ${clients} clients`,
      subtitle: "get_credits answered without error · higher is better",
      bars,
    });
    const judged = clientKinds.map(([client]) =>
      goalOf(
        output,
        "get_credits HTTP",
        `calls/s at ${clients} clients, ours / minimal SDK v2 proxy, ${clientLabel(client)}`,
      ),
    );
    rows.push({
      figure: `Streamable HTTP calls/s at ${clients} clients against a minimal MCP SDK v2 server proxying the same GET (raw 2025-11-25, raw 2026-07-28, SDK v1 clients)`,
      value: `${clientKinds.map(([client]) => `**${times(ratioOf(client))}**`).join(", ")} (${clientKinds.map(([, ours]) => int(rate(ours))).join(", ")} calls/s; direct GET ${int(rate("direct"))})`,
      goal: judged[0].goal ? `${judged[0].goal} each` : "",
      met: judged.every((g) => g.met === "yes") ? "yes" : "NO",
    });
  }

  // --- image previews: what a preview adds to generate_image ---------------------------------------------
  const previews = previewsOf(output);
  if (previews !== undefined) {
    const sizes = Object.keys(previews.bySize);
    const added = (size) => previews.bySize[size].addedP50Ms.median;
    const bars = sizes.map((size) => ({
      label: `${size} image`,
      value: added(size),
      text: ms(added(size)),
      ours: true,
      ...(size === "2k" ? goalBar(`< ${PREVIEW_ADDED_GOAL_MS} ms`) : {}),
    }));
    sections.push({
      title: "Image preview cost, ms",
      subtitle: "added p50 of generate_image, previews on − off · lower is better",
      bars,
    });
    if (previews.bySize["2k"] !== undefined) {
      const others = sizes.filter((s) => s !== "2k").map((s) => `${ms(added(s))} at ${s}`);
      rows.push({
        figure: "Image preview cost: added p50 of `generate_image` at 2k, previews on − off",
        value: `**${ms(added("2k"))}**${others.length > 0 ? ` (${others.join(", ")})` : ""}`,
        goal: `< ${PREVIEW_ADDED_GOAL_MS} ms`,
        met: added("2k") < PREVIEW_ADDED_GOAL_MS ? "yes" : "NO",
      });
    }
  }

  // --- waiting on many tasks under the rate limit: ours against a naive polling loop ---------------------
  const byK = r.waiting?.byK;
  if (byK !== undefined && Object.keys(byK).length > 0) {
    const k = Math.max(...Object.keys(byK).map(Number));
    const { ours, naive } = byK[k];
    const n429 = (s) => `HTTP 429s: ${int(s.http429.median)}`;
    sections.push({
      title: `Waiting on ${k} tasks under the rate limit: status requests per completed task`,
      subtitle: "lower is better",
      bars: [
        {
          label: OURS,
          value: ours.requestsPerTask.median,
          text: fixed(ours.requestsPerTask.median, 2),
          note: n429(ours),
          ours: true,
        },
        {
          label: "naive polling loop",
          value: naive.requestsPerTask.median,
          text: fixed(naive.requestsPerTask.median, 2),
          note: n429(naive),
        },
      ],
    });
    const { goal, met } = goalOf(output, `waiting K=${k} ours`, "429s seen");
    rows.push({
      figure: `Waiting on ${k} tasks under the rate limit: status requests per completed task (HTTP 429s)`,
      value: `**${fixed(ours.requestsPerTask.median, 2)}** (${int(ours.http429.median)}), a naive polling loop ${fixed(naive.requestsPerTask.median, 2)} (${int(naive.http429.median)}): **${fixed(naive.requestsPerTask.median / ours.requestsPerTask.median, 1)}x fewer**`,
      goal: goal && `${goal} 429s`,
      met,
    });
  }

  // --- replicas on Redis: several replicas waiting on the same tasks ---------------------------------------
  const replicaRows = r.replicas?.rows ?? [];
  const shared = replicaRows.filter((row) => /, Redis, every task waited on by all/.test(row.setup));
  if (shared.length > 0) {
    const ks = shared.map((row) => row.k);
    const k = ks.includes(50) ? 50 : Math.max(...ks);
    const withRedis = shared.find((row) => row.k === k);
    const alone = replicaRows.find(
      (row) => row.k === k && /no Redis\), every task waited on by all/.test(row.setup),
    );
    const count = /by all (\d+)/.exec(withRedis.setup)?.[1] ?? "all";
    const bars = [
      {
        label: `${count} replicas, Redis`,
        value: withRedis.requestsPerTask,
        text: fixed(withRedis.requestsPerTask, 2),
        note: `delay ${int(withRedis.delayP50)} ms`,
        ours: true,
      },
    ];
    if (alone !== undefined) {
      bars.push({
        label: `${count} replicas, no Redis`,
        value: alone.requestsPerTask,
        text: fixed(alone.requestsPerTask, 2),
        note: `delay ${int(alone.delayP50)} ms`,
      });
    }
    sections.push({
      title: `${count} replicas all waiting on the same ${k} tasks: status requests per task`,
      subtitle: "median detection delay beside · lower is better",
      bars,
    });
    rows.push({
      figure: `${count} replicas all waiting on the same ${k} tasks: status requests per task, with Redis (without)`,
      value:
        alone === undefined
          ? `**${fixed(withRedis.requestsPerTask, 2)}**`
          : `**${fixed(withRedis.requestsPerTask, 2)}** (${fixed(alone.requestsPerTask, 2)}): **${fixed(alone.requestsPerTask / withRedis.requestsPerTask, 1)}x fewer**; detection delay ${int(withRedis.delayP50)} ms (${int(alone.delayP50)} ms)`,
      goal: "",
      met: "",
    });
  } else {
    sections.push({
      title: "Replicas on Redis",
      subtitle: "",
      missing: r.replicas?.skipped
        ? `not measured in this run: ${r.replicas.skipped}`
        : "not in this results file (npm run bench measures them where redis-server is installed)",
      bars: [],
    });
  }
  return { sections, rows };
}

// --- SVG ---------------------------------------------------------------------------------------------------

const COLORS = {
  background: "#ffffff",
  border: "#d0d7de",
  text: "#1f2328",
  muted: "#59636e",
  ours: "#0969da",
  other: "#8c959f",
  reference: "#d0d7de",
  goal: "#1a7f37",
  rule: "#eaeef2",
};
const FONT = "-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
const escapeXml = (text) =>
  String(text).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c],
  );
/** A generous estimate of a text's width (no font metrics here): wide enough for common sans-serif fonts. */
const textWidth = (text, size, bold = false) => text.length * size * (bold ? 0.62 : 0.58);

const W = 880;
const MARGIN = 28;
const LABEL_RIGHT = MARGIN + 232;
const BAR_X = LABEL_RIGHT + 12;
const ROW = 26;
const BAR_H = 16;

export function renderSvg(output, model = headlines(output)) {
  const machine = output.machine ?? {};
  const date = (machine.date ?? "").slice(0, 10);
  const parts = [];
  let y = MARGIN + 14;
  const text = (
    x,
    yy,
    content,
    { size = 12, weight = "normal", fill = COLORS.text, anchor = "start" } = {},
  ) =>
    `<text x="${x.toFixed(1)}" y="${yy.toFixed(1)}" font-size="${size}" font-weight="${weight}" fill="${fill}" text-anchor="${anchor}">${content}</text>`;

  parts.push(text(MARGIN, y, "generation-mcp: benchmark headlines", { size: 18, weight: "bold" }));
  y += 20;
  const about = [
    "npm run bench",
    date,
    machine.cpu && `${machine.cpu.replace(/\(R\)/g, "")}, ${machine.cores} cores, Node ${machine.node}`,
    "medians of repeated runs",
    output.quick ? "BENCH_QUICK=1 (reduced repetitions)" : "",
  ].filter(Boolean);
  parts.push(text(MARGIN, y, escapeXml(about.join(" · ")), { fill: COLORS.muted }));
  y += 14;

  for (const section of model.sections) {
    y += 14;
    parts.push(`<line x1="${MARGIN}" y1="${y}" x2="${W - MARGIN}" y2="${y}" stroke="${COLORS.rule}" />`);
    y += 22;
    const subtitle = section.subtitle
      ? `<tspan font-weight="normal" fill="${COLORS.muted}">  ${escapeXml(section.subtitle)}</tspan>`
      : "";
    parts.push(text(MARGIN, y, `${escapeXml(section.title)}${subtitle}`, { size: 13.5, weight: "bold" }));
    y += 4;
    if (section.missing) {
      y += ROW - 6;
      parts.push(text(BAR_X, y, escapeXml(section.missing), { fill: COLORS.muted }));
      continue;
    }
    // One scale per section: every bar with its value text, and every goal line with its label, fits the card.
    const right = W - MARGIN;
    const valueText = (bar) => `${bar.text}${bar.note ? `  ${bar.note}` : ""}`;
    const goalText = (bar) => `goal ${bar.goalLabel}`;
    let scale = Infinity;
    for (const bar of section.bars) {
      const room = (value, label) => {
        if (value > 0) scale = Math.min(scale, (right - BAR_X - 8 - textWidth(label, 12)) / value);
      };
      // A bar past its goal line has the goal's label after its value (on the bar it would not read).
      const past = bar.goal !== undefined && bar.value > bar.goal;
      room(bar.value, past ? `${valueText(bar)}    ${goalText(bar)}` : valueText(bar));
      if (bar.goal !== undefined && !past) room(bar.goal, goalText(bar));
    }
    if (!Number.isFinite(scale)) scale = 1;
    for (const bar of section.bars) {
      y += ROW;
      const fill = bar.ours ? COLORS.ours : bar.reference ? COLORS.reference : COLORS.other;
      const width = Math.max(2, (Number.isFinite(bar.value) ? bar.value : 0) * scale);
      const top = y - BAR_H + 4;
      parts.push(
        text(LABEL_RIGHT, y, escapeXml(bar.label), {
          anchor: "end",
          weight: bar.ours && bar.label === OURS ? "bold" : "normal",
        }),
        `<rect x="${BAR_X}" y="${top.toFixed(1)}" width="${width.toFixed(1)}" height="${BAR_H}" rx="2" fill="${fill}" />`,
      );
      // The value beside its bar; past the goal line and its label when they would overlap.
      let valueX = BAR_X + width + 8;
      if (bar.goal !== undefined) {
        const gx = BAR_X + bar.goal * scale;
        const past = bar.value > bar.goal;
        const goalX = past ? valueX + textWidth(valueText(bar), 12) + 16 : gx + 6;
        parts.push(
          `<line x1="${gx.toFixed(1)}" y1="${(top - 3).toFixed(1)}" x2="${gx.toFixed(1)}" y2="${(top + BAR_H + 3).toFixed(1)}" stroke="${COLORS.goal}" stroke-width="2" stroke-dasharray="3 2" />`,
          text(goalX, y, escapeXml(goalText(bar)), { fill: COLORS.goal }),
        );
        const overlaps =
          !past &&
          valueX + textWidth(valueText(bar), 12) > gx - 6 &&
          valueX < gx + 6 + textWidth(goalText(bar), 12);
        if (overlaps) valueX = Math.max(valueX, gx + 6 + textWidth(goalText(bar), 12) + 12);
      }
      const note = bar.note ? `<tspan fill="${COLORS.muted}">  ${escapeXml(bar.note)}</tspan>` : "";
      parts.push(text(valueX, y, `<tspan font-weight="bold">${escapeXml(bar.text)}</tspan>${note}`));
    }
  }
  y += 30;
  parts.push(
    text(
      MARGIN,
      y,
      escapeXml(
        "Blue: generation-mcp. Dashed green: the goal. Every ratio is measured in the same run. Drawn by bench/chart.mjs from bench/results/latest.json.",
      ),
      { size: 11, fill: COLORS.muted },
    ),
  );
  const height = y + MARGIN - 8;
  const title = "generation-mcp benchmark headlines";
  const desc = model.sections
    .map((s) =>
      s.missing
        ? `${s.title}: ${s.missing}`
        : `${s.title}: ${s.bars.map((b) => `${b.label} ${b.text}`).join(", ")}`,
    )
    .join(". ");
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="${escapeXml(FONT)}" role="img" aria-labelledby="title desc">`,
    `<title id="title">${escapeXml(title)}</title>`,
    `<desc id="desc">${escapeXml(desc)}</desc>`,
    `<rect x="0.5" y="0.5" width="${W - 1}" height="${height - 1}" rx="8" fill="${COLORS.background}" stroke="${COLORS.border}" />`,
    ...parts,
    "</svg>",
    "",
  ].join("\n");
}

// --- Markdown: the head of README's Performance section (its markers: scripts/readme-bench.mjs) ----------------------------------------------------

const ignored = (table) =>
  ["<!-- prettier-ignore-start -->", table, "<!-- prettier-ignore-end -->"].join("\n");

export function renderHeadline(output, model = headlines(output)) {
  const machine = output.machine ?? {};
  const date = (machine.date ?? "").slice(0, 10);
  const lines = [
    START,
    "",
    `Measured with \`${output.command ?? "npm run bench"}\` on ${machine.cpu ?? "an unknown CPU"} (${machine.cores} cores), Node ${machine.node}, ${date}${output.quick ? " (BENCH_QUICK=1: reduced repetitions, not for publishing)" : ""}. Every figure is the median of repeated runs and every ratio is measured in the same run; lower is better for all of them but calls/s.`,
    "",
    ignored(
      markdownTable(
        ["figure", "this run", "goal", "met"],
        model.rows.map((row) => [row.figure, row.value, row.goal, row.met]),
      ),
    ),
    "",
    `![Headline figures of npm run bench as bars: cold start, added latency per call, HTTP calls/s, image preview cost, waiting under the rate limit, replicas on Redis](${SVG_PATH})`,
    "",
    "<details><summary>All figures</summary>",
    "",
    ignored(benchTable(output.table ?? [])),
    "",
    ...benchNotes(output).map((note) => `- ${note}`),
  ];
  const previews = previewsOf(output);
  if (previews !== undefined) {
    const later =
      output.previews !== undefined && output.previewsRun?.machine?.date
        ? `; a later run than the table above, ${output.previewsRun.machine.date.slice(0, 10)}`
        : "";
    lines.push(
      "",
      `Image previews, \`generate_image\` with previews on against off (\`bench/previews.mjs\`${later}):`,
      "",
      ignored(previewRows(previews.bySize)),
    );
  }
  const replicas = output.results?.replicas;
  if (replicas?.rows?.length > 0) {
    lines.push(
      "",
      "Replicas sharing state on Redis (`bench/replicas.mjs`; one round; waits spread round-robin unless every replica waits on every task):",
      "",
      ignored(replicasTable(replicas.rows)),
    );
  }
  lines.push("", "</details>", "", END, "");
  return lines.join("\n");
}

/** Writes latest.svg and headline.md beside the results; returns their paths. */
export function writeChart(output, outDir) {
  mkdirSync(outDir, { recursive: true });
  const model = headlines(output);
  const svg = path.join(outDir, "latest.svg");
  const md = path.join(outDir, "headline.md");
  writeFileSync(svg, renderSvg(output, model));
  writeFileSync(md, renderHeadline(output, model));
  return [svg, md];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const resultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  const input = path.resolve(process.argv[2] ?? path.join(resultsDir, "latest.json"));
  const outDir = path.resolve(process.argv[3] ?? path.dirname(input));
  const output = JSON.parse(readFileSync(input, "utf8"));
  for (const file of writeChart(output, outDir)) {
    process.stderr.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  }
}
