/** A growable byte buffer for the image encoders. */
export class ByteSink {
  private buffer: Buffer;
  length = 0;

  constructor(initial = 1024) {
    this.buffer = Buffer.alloc(initial);
  }

  push(byte: number): void {
    if (this.length === this.buffer.length) {
      const bigger = Buffer.alloc(this.buffer.length * 2);
      this.buffer.copy(bigger);
      this.buffer = bigger;
    }
    this.buffer[this.length++] = byte;
  }

  pushAll(bytes: ArrayLike<number>): void {
    for (let i = 0; i < bytes.length; i++) this.push(bytes[i] ?? 0);
  }

  toBuffer(): Buffer {
    return Buffer.from(this.buffer.subarray(0, this.length));
  }
}
