import * as crypto from 'node:crypto';

/** `crypto.hash` (Node ≥ 20.12): one native call, no `Hash` object. */
type OneShotHash = (
  algorithm: string,
  data: string | NodeJS.ArrayBufferView,
  outputEncoding: 'hex',
) => string;
const oneShot = (crypto as { hash?: OneShotHash }).hash;

/**
 * Bytes of the scratch buffer an event's hashed form is written into. An event whose form may
 * not fit (its text's UTF-16 length times 3 bounds its UTF-8 length) is hashed from one string,
 * as before: at that size the copy is small next to the sha-256 itself.
 */
const scratchBytes = 16 * 1024;
/** Hashed forms up to this many bytes reuse one view of the scratch buffer per length. */
const cachedViewBytesMax = 1024;
/** Room for two decimal numbers and the five separators (`String(n)` is at most 24 characters). */
const fixedBytesMax = 2 * 24 + 5;

const scratch = Buffer.allocUnsafeSlow(scratchBytes);
const views: Array<Buffer | undefined> = new Array(cachedViewBytesMax + 1).fill(undefined);

/**
 * The hash of one event: sha-256 (hex) over the previous event's hash and the event's stored
 * form. Every backend computes it with this one function, so a log copied between backends
 * still verifies.
 *
 * The bytes hashed are the UTF-8 form of `prevHash \n executionId \n sequence \n type \n at \n`
 * followed by the payload text (ADR 0001). They are written straight into one scratch buffer
 * and hashed there (ADR 0054): no head string, no head-and-payload copy, no string for `at`;
 * what is allocated per event is the hex digest, which is what the log stores. The digest is
 * the same as over the one string, byte for byte.
 */
export function eventHash(
  prevHash: string | null,
  executionId: string,
  sequence: number,
  type: string,
  at: number,
  payloadText: string,
): string {
  const prev = prevHash ?? '';
  const units = prev.length + executionId.length + type.length + payloadText.length;
  if (oneShot === undefined || units * 3 + fixedBytesMax > scratchBytes) {
    return hashOfText(prev, executionId, sequence, type, at, payloadText);
  }
  let end = scratch.write(prev, 0, 'utf8');
  scratch[end++] = 0x0a;
  end += scratch.write(executionId, end, 'utf8');
  scratch[end++] = 0x0a;
  end = writeDecimal(sequence, end);
  scratch[end++] = 0x0a;
  end += scratch.write(type, end, 'utf8');
  scratch[end++] = 0x0a;
  end = writeDecimal(at, end);
  scratch[end++] = 0x0a;
  end += scratch.write(payloadText, end, 'utf8');
  return oneShot('sha256', viewOf(end), 'hex');
}

/** The documented form as one string, hashed: for large events and a Node without `crypto.hash`. */
function hashOfText(
  prev: string,
  executionId: string,
  sequence: number,
  type: string,
  at: number,
  payloadText: string,
): string {
  const head = `${prev}\n${executionId}\n${sequence}\n${type}\n${at}\n`;
  if (oneShot !== undefined) return oneShot('sha256', head + payloadText, 'hex');
  return crypto.createHash('sha256').update(head).update(payloadText).digest('hex');
}

/** The first `bytes` of the scratch buffer; short ones keep their view (one per length). */
function viewOf(bytes: number): Buffer {
  if (bytes > cachedViewBytesMax) return scratch.subarray(0, bytes);
  let view = views[bytes];
  if (view === undefined) {
    view = scratch.subarray(0, bytes);
    views[bytes] = view;
  }
  return view;
}

/** Writes `value` as `${value}` spells it at `offset`; returns the offset after it. */
function writeDecimal(value: number, offset: number): number {
  if (!(Number.isSafeInteger(value) && value >= 0)) {
    return offset + scratch.write(String(value), offset, 'latin1');
  }
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  let at = offset + digits;
  let rest = value;
  do {
    const next = Math.floor(rest / 10);
    scratch[--at] = 0x30 + (rest - next * 10);
    rest = next;
  } while (rest > 0);
  return offset + digits;
}
