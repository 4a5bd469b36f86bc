/** How many of something each caller may hold at once (calls in flight, bodies being read). */
export class CallerSlots {
  private readonly held = new Map<string, number>();

  constructor(private readonly max: number) {}

  /**
   * Takes `count` slots for the caller, all or none: the function that gives them back, or undefined when
   * the caller would hold more than the maximum.
   */
  take(callerId: string, count: number): (() => void) | undefined {
    const now = this.held.get(callerId) ?? 0;
    if (count > 0 && now + count > this.max) return undefined;
    this.held.set(callerId, now + count);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.held.get(callerId) ?? 0) - count;
      if (left > 0) this.held.set(callerId, left);
      else this.held.delete(callerId);
    };
  }
}
