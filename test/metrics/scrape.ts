/** Scraping `GET /metrics` of a running `--http` server and reading it with a real Prometheus text parser. */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { expect } from "vitest";

export interface Sample {
  labels: Record<string, string>;
  value?: string;
  count?: string;
  sum?: string;
  buckets?: Record<string, string>;
}

export interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

export interface Scrape {
  text: string;
  families: Map<string, Family>;
  /** The value of one series (a counter or gauge): 0 when it is not there. */
  value(name: string, labels?: Record<string, string>): number;
  /** The observation count of one histogram series (its `_count`): 0 when it is not there. */
  count(name: string, labels?: Record<string, string>): number;
  /** Every series as `name{label="value",...}`, sorted: what label cardinality is measured on. */
  series(): string[];
}

export function metricsUrl(mcpUrl: string): string {
  return mcpUrl.replace(/\/mcp$/, "/metrics");
}

export async function scrape(
  mcpUrl: string,
  headers: Record<string, string> = {},
): Promise<ReturnType<typeof parseScrape>> {
  const response = await fetch(metricsUrl(mcpUrl), { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${text}`);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseScrape(text);
}

/**
 * The parser flattens every series of a labelled histogram into one sample (it reads unlabelled ones only),
 * so a histogram is read as what it is on the wire: its `_bucket`, `_sum` and `_count` series, each with its
 * labels. `histograms` keeps which families were declared histograms.
 */
export function parseScrape(text: string): Scrape & { histograms: Set<string> } {
  const histograms = new Set([...text.matchAll(/^# TYPE (\S+) histogram$/gm)].map((match) => match[1] ?? ""));
  const untyped = text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped");
  // Read that way, one histogram's series interleave (bucket, sum, count per label set): merged by name.
  const families = new Map<string, Family>();
  for (const family of parsePrometheusTextFormat(untyped) as Family[]) {
    const known = families.get(family.name);
    if (known === undefined) families.set(family.name, family);
    else known.metrics.push(...family.metrics);
  }
  const find = (name: string, labels: Record<string, string>) =>
    families
      .get(name)
      ?.metrics.find((sample) =>
        Object.entries(labels).every(([key, value]) => (sample.labels ?? {})[key] === value),
      );
  return {
    text,
    families,
    histograms,
    value: (name, labels = {}) => Number(find(name, labels)?.value ?? 0),
    count: (name, labels = {}) => Number(find(`${name}_count`, labels)?.value ?? 0),
    series: () =>
      [...families.values()]
        .flatMap((family) =>
          family.metrics.map((sample) => {
            const labels = Object.entries(sample.labels ?? {})
              .map(([key, value]) => `${key}="${value}"`)
              .sort()
              .join(",");
            return `${family.name}{${labels}}`;
          }),
        )
        .sort(),
  };
}
