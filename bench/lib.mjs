/** Shared helpers for the benchmark: statistics, timing, process sampling. */
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { setTimeout } from "node:timers";

export const now = () => performance.now();

export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** { median, min, max, n } of a list of numbers. */
export function summary(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  return {
    median: quantile(finite, 0.5),
    min: Math.min(...finite),
    max: Math.max(...finite),
    n: finite.length,
  };
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** VmRSS / VmHWM of a process in bytes (Linux /proc); undefined elsewhere. */
export function procMemory(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name) => {
      const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(text);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    return { rss: field("VmRSS"), hwm: field("VmHWM") };
  } catch {
    return { rss: undefined, hwm: undefined };
  }
}

/** Resets VmHWM to the current RSS (Linux >= 4.0: write "5" to clear_refs). Returns false when not allowed. */
export function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() ?? "unknown",
    cores: cpus.length,
    memory_gb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadavg_at_start: os.loadavg().map((v) => Math.round(v * 100) / 100),
    date: new Date().toISOString(),
  };
}

export const fmtMs = (v, digits = 1) => (Number.isFinite(v) ? `${v.toFixed(digits)} ms` : "n/a");
export const fmtNum = (v, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : "n/a");
export const fmtMB = (bytes) => (Number.isFinite(bytes) ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : "n/a");
/** "median (min–max)" */
export const fmtRange = (s, f = fmtNum) => `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
