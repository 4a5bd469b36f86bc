/**
 * Turns at work only a few may do at once, fair across callers: at most `perCaller` turns of one caller and
 * `slots` in all at a time; a freed turn goes to the first caller in the round who may take one, who then
 * goes to the back of the round. One caller's burst thus holds another back by at most one turn of its own.
 */
export class FairTurns {
  private running = 0;
  private readonly held = new Map<string, number>();
  /** Callers waiting, in the round's order, each with its own line (first come, first served). */
  private readonly lines = new Map<string, (() => void)[]>();

  constructor(private readonly limits: { slots: number; perCaller: number; waitingPerCaller: number }) {}

  /** Waits for a turn of `caller`; false when its line is full or `deadline` (epoch ms) comes first. */
  take(caller: string, deadline: number): Promise<boolean> {
    if (this.running < this.limits.slots && this.heldBy(caller) < this.limits.perCaller) {
      this.grant(caller);
      return Promise.resolve(true);
    }
    const line = this.lines.get(caller) ?? [];
    if (line.length >= this.limits.waitingPerCaller) return Promise.resolve(false);
    this.lines.set(caller, line);
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        line.splice(line.indexOf(go), 1);
        if (line.length === 0 && this.lines.get(caller) === line) this.lines.delete(caller);
        resolve(false);
      }, deadline - Date.now());
      line.push(go);
    });
  }

  /** Ends a turn of `caller`, handing it straight on, so no newcomer slips in between. */
  give(caller: string): void {
    this.running -= 1;
    this.held.set(caller, this.heldBy(caller) - 1);
    if (this.heldBy(caller) === 0) this.held.delete(caller);
    for (const [next, line] of this.lines) {
      if (this.heldBy(next) >= this.limits.perCaller) continue;
      const go = line.shift();
      this.lines.delete(next);
      if (line.length > 0) this.lines.set(next, line);
      this.grant(next);
      go?.();
      return;
    }
  }

  private heldBy(caller: string): number {
    return this.held.get(caller) ?? 0;
  }

  private grant(caller: string): void {
    this.running += 1;
    this.held.set(caller, this.heldBy(caller) + 1);
  }
}
