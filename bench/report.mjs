/**
 * The bench's printed report, from what bench/results/latest.json holds: the main table (its `table` rows,
 * built by bench/run.mjs), the notes under it, the previews table and the replicas table. bench/run.mjs
 * prints it; bench/chart.mjs folds it into bench/results/headline.md. Plain formatting only: no imports
 * of dist/ or of the SDK, so it runs without a build.
 */

/** A Markdown table with padded columns (the README keeps it between prettier-ignore markers). */
export function markdownTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => `| ${cells.map((cell, i) => String(cell).padEnd(widths[i])).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

export const TABLE_HEADER = ["section", "metric", "median", "min – max", "goal", "met"];

/** The main table from latest.json's `table` rows ({ section, metric, median, range, goal, met }). */
export function benchTable(tableRows) {
  return markdownTable(
    TABLE_HEADER,
    tableRows.map((row) => [row.section, row.metric, row.median, row.range, row.goal, row.met]),
  );
}

/** The previews figures of a results file: a later previews-only run (`previews`) wins over `results.previews`. */
export function previewsOf(output) {
  if (output.previews !== undefined) {
    return { bySize: output.previews, repetitions: output.previewsRun?.repetitions ?? {} };
  }
  if (output.results?.previews !== undefined) {
    return { bySize: output.results.previews, repetitions: output.repetitions ?? {} };
  }
  return undefined;
}

/** The notes printed under the main table: how each section was measured. */
export function benchNotes(output) {
  const N = output.repetitions;
  const r = output.results;
  const machine = output.machine;
  const notes = [
    `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memory_gb} GB, ${machine.platform}, Node ${machine.node}; load average at start ${machine.loadavg_at_start.join(" ")}`,
    `cold start: spawn -> initialize -> tools/list answered; ${N.coldRounds} interleaved rounds after one warm-up round; ratios are medians of same-round ratios. Floor = ${r.coldStart.floor}. generation-mcp = the package bin (dist/bundle/cli.js, the esbuild bundle).${r.coldStart.references === undefined ? "" : ` References: ${r.coldStart.references}.`}${r.coldStart.fastestPeer === undefined ? "" : ` Fastest peer: ${r.coldStart.fastestPeer}.`}`,
    `per-call: ${N.overheadRounds} rounds; each ${N.overheadCalls} interleaved pairs for latency, ${N.throughputCalls} calls per throughput figure.`,
    r.httpOverhead.http2025 === undefined
      ? `HTTP: ${N.httpRounds} rounds; each ${N.httpCalls} interleaved triples (direct, stdio, HTTP) for latency, ${N.httpThroughputCalls} calls per throughput figure. ${r.httpOverhead.clients}. Errors: ${r.httpOverhead.errors}. The --http server runs with GENERATION_HTTP_MAX_CONCURRENT=${r.httpOverhead.maxConcurrentPerKey}.`
      : `HTTP: ${N.httpRounds} rounds; each ${N.httpCalls} calls per path interleaved one by one (in an order shuffled per tuple) for latency, ${N.httpThroughputCalls} calls per throughput figure. Reference: ${r.httpOverhead.reference}. Floor: ${r.httpOverhead.floorServer}. Clients: ${r.httpOverhead.clients}. Added latency = p50 of the path - p50 of the direct GET of the same round. Errors: ${r.httpOverhead.errors}. The --http server runs with GENERATION_HTTP_MAX_CONCURRENT=${r.httpOverhead.maxConcurrentPerKey}.`,
    `waiting: ${r.waiting.setup}. ours = ${r.waiting.ours}; naive = ${r.waiting.naive}. Ours and naive run simultaneously, each on its own sandbox. ${N.waitRounds} rounds.`,
    `upload: peak measured with ${r.upload.peakMethod}; ${N.uploadRounds} uploads after one warm-up.`,
    `memory: ${N.memoryRounds} fresh servers per variant, ${r.memory.calls} calls each, RSS sampled every ${r.memory.block}; mix: ${r.memory.mix}.`,
  ];
  if (output.goals !== undefined) {
    notes.push(
      `goals: ${Object.entries(output.goals)
        .map(([name, goal]) => `${name} ${goal}`)
        .join("; ")}.`,
    );
  }
  const previews = previewsOf(output);
  if (previews?.repetitions.previewRounds !== undefined) {
    notes.push(
      `previews: ${previews.repetitions.previewRounds} fresh server pairs per size, ${previews.repetitions.previewCalls} interleaved pairs each; see bench/previews.mjs.`,
    );
  }
  notes.push(
    `total bench time ${output.elapsedSeconds} s${output.quick ? " (BENCH_QUICK=1: reduced repetitions)" : ""}.`,
  );
  return notes;
}

const mib = (bytes) => (Number.isFinite(bytes) ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : "n/a");
const ms = (value) => (Number.isFinite(value) ? value.toFixed(1) : "n/a");
/** The previews goal: added latency at 2k, ms. */
export const PREVIEW_ADDED_GOAL_MS = 150;
/** "Back to baseline": the server and its children within this much of the idle server once the worker stopped. */
export const PREVIEW_BASELINE_SLACK_BYTES = 16 * 2 ** 20;

/** The README's small previews table: one row per size, medians over rounds (min – max for the added p50). */
export function previewRows(bySize) {
  const header = [
    "size",
    "added p50, ms",
    "added p95, ms",
    "call on / off p50, ms",
    "preview (base64)",
    "server peak RSS growth",
    "server RSS growth 2 s after",
    "worker peak RSS",
    "all RSS vs idle once the worker stopped",
    "goal",
    "met",
  ];
  const rows = Object.entries(bySize).map(([size, s]) => {
    const back = s.workerStopped && s.settledGrowthBytes <= PREVIEW_BASELINE_SLACK_BYTES;
    const goal = `${size === "2k" ? `< ${PREVIEW_ADDED_GOAL_MS} ms added; ` : ""}RSS back to idle (+${mib(PREVIEW_BASELINE_SLACK_BYTES)})`;
    const met = `${size === "2k" ? (s.addedP50Ms.median < PREVIEW_ADDED_GOAL_MS ? "yes; " : "NO; ") : ""}${back ? "yes" : "NO"}`;
    return [
      size,
      `${ms(s.addedP50Ms.median)} (${ms(s.addedP50Ms.min)} – ${ms(s.addedP50Ms.max)})`,
      ms(s.addedP95Ms.median),
      `${ms(s.onP50Ms.median)} / ${ms(s.offP50Ms.median)}`,
      `${(s.previewBase64Chars.median / 1000).toFixed(0)} kB`,
      mib(s.peakRssGrowthBytes.median),
      mib(s.rssGrowthAfterBytes.median),
      mib(s.workerPeakRssBytes.median),
      `${mib(s.settledGrowthBytes)}${s.workerStopped ? "" : " (worker still running)"}`,
      goal,
      met,
    ];
  });
  return markdownTable(header, rows);
}

/** The replicas table (bench/replicas.mjs rows). */
export function replicasTable(rows) {
  const header =
    "| K | setup | completed | 429s | status requests per task | detection delay median, ms | p95, ms |";
  const lines = rows.map(
    (row) =>
      `| ${row.k} | ${row.setup} | ${row.completed}/${row.k} | ${row.http429} | ${row.requestsPerTask.toFixed(2)} | ${Math.round(row.delayP50)} | ${Math.round(row.delayP95)} |`,
  );
  return [header, "|---|---|---|---|---|---|---|", ...lines].join("\n");
}

/** The replicas part of the printed report. */
export function replicasSection(replicas) {
  if (replicas === undefined) return "replicas: not in this results file";
  if (replicas.skipped) return `replicas: skipped (${replicas.skipped})`;
  return `replicas (one round; waits spread round-robin; time scaled as the waiting rows):\n\n${replicasTable(replicas.rows)}`;
}

/** Everything bench/run.mjs prints after a run, from the results file it writes. */
export function benchReport(output) {
  const previews = previewsOf(output);
  return [
    benchTable(output.table),
    ...(previews === undefined ? [] : [previewRows(previews.bySize)]),
    benchNotes(output)
      .map((note) => `- ${note}`)
      .join("\n"),
    replicasSection(output.results.replicas),
  ].join("\n\n");
}
