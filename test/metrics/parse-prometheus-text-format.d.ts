/** The package ships no types: it parses Prometheus text into metric families (see test/metrics/scrape.ts). */
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
