/**
 * keccak256 (the Ethereum hash: Keccak with the original 0x01 padding, not SHA3-256's 0x06).
 *
 * Why here: WebCrypto has SHA-2 but no Keccak, and an address or an EIP-191 digest needs it.
 * Readable over fast: the 25 lanes are 64-bit BigInts, the rounds follow the specification's
 * theta, rho and pi, chi, iota steps. The dashboard hashes a few hundred bytes per call.
 */

const MASK = (1n << 64n) - 1n;
const RATE = 136; // bytes absorbed per permutation for a 256-bit output (1600 - 2 * 256 bits)

/** The round constants, made by the specification's LFSR rather than pasted as a table. */
const ROUND_CONSTANTS = (() => {
  const out = [];
  let r = 1;
  const step = () => {
    const bit = r & 1;
    r = (r << 1) ^ (r & 0x80 ? 0x71 : 0);
    r &= 0xff;
    return bit;
  };
  for (let round = 0; round < 24; round++) {
    let c = 0n;
    for (let j = 0; j < 7; j++) if (step()) c |= 1n << BigInt((1 << j) - 1);
    out.push(c);
  }
  return out;
})();

/** Rotation offsets and the pi step's lane order, walked as the specification defines them. */
const [ROTATIONS, PI] = (() => {
  const rot = new Array(25).fill(0);
  const pi = new Array(25).fill(0);
  let x = 1;
  let y = 0;
  for (let t = 0; t < 24; t++) {
    rot[x + 5 * y] = (((t + 1) * (t + 2)) / 2) % 64;
    [x, y] = [y, (2 * x + 3 * y) % 5];
  }
  // lane (x, y) moves to (y, 2x + 3y)
  for (let x0 = 0; x0 < 5; x0++) for (let y0 = 0; y0 < 5; y0++) pi[x0 + 5 * y0] = y0 + 5 * ((2 * x0 + 3 * y0) % 5);
  return [rot, pi];
})();

const rotl = (v, n) => (n === 0 ? v : ((v << BigInt(n)) | (v >> BigInt(64 - n))) & MASK);

function permute(state) {
  for (let round = 0; round < 24; round++) {
    const c = [0, 1, 2, 3, 4].map((x) => state[x] ^ state[x + 5] ^ state[x + 10] ^ state[x + 15] ^ state[x + 20]);
    for (let x = 0; x < 5; x++) {
      const d = c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
      for (let y = 0; y < 25; y += 5) state[x + y] ^= d;
    }
    const b = new Array(25);
    for (let i = 0; i < 25; i++) b[PI[i]] = rotl(state[i], ROTATIONS[i]);
    for (let y = 0; y < 25; y += 5) {
      for (let x = 0; x < 5; x++) state[x + y] = b[x + y] ^ (~b[((x + 1) % 5) + y] & MASK & b[((x + 2) % 5) + y]);
    }
    state[0] ^= ROUND_CONSTANTS[round];
  }
}

/** keccak256 of `bytes` (a Uint8Array): a 32-byte Uint8Array. */
export function keccak256(bytes) {
  const padded = new Uint8Array(Math.floor(bytes.length / RATE) * RATE + RATE);
  padded.set(bytes);
  padded[bytes.length] ^= 0x01;
  padded[padded.length - 1] ^= 0x80;
  const state = new Array(25).fill(0n);
  for (let offset = 0; offset < padded.length; offset += RATE) {
    for (let lane = 0; lane < RATE / 8; lane++) {
      let v = 0n;
      for (let k = 7; k >= 0; k--) v = (v << 8n) | BigInt(padded[offset + lane * 8 + k]);
      state[lane] ^= v;
    }
    permute(state);
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number((state[i >> 3] >> BigInt(8 * (i & 7))) & 0xffn);
  return out;
}
