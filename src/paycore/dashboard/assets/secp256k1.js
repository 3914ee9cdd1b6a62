/**
 * secp256k1 keys and Ethereum signatures (EIP-191 personal_sign), for the dashboard's session key.
 *
 * Why here: WebCrypto offers P-256 but not secp256k1, and paycore's session scheme recovers
 * an Ethereum address from each signature. Written for reading: BigInt field arithmetic,
 * Jacobian points, RFC 6979 nonces (HMAC-SHA256 from WebCrypto), low-s signatures with the
 * recovery byte, as every Ethereum wallet makes them, so the same key and message give the
 * same bytes as any of them.
 *
 * What it is not: constant-time. BigInt operations take data-dependent time, so a process
 * that can time many signatures precisely could learn the key; the key is a short-lived
 * session key, never the owner's wallet key, and the wallet can deregister it.
 */

import { keccak256 } from "./keccak.js";

const P = 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const G = [
  0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n,
  0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n,
];

const mod = (a, m = P) => ((a % m) + m) % m;

/** a^e mod m by square-and-multiply. */
function power(a, e, m = P) {
  let result = 1n;
  let base = mod(a, m);
  for (let k = e; k > 0n; k >>= 1n) {
    if (k & 1n) result = (result * base) % m;
    base = (base * base) % m;
  }
  return result;
}

/** The inverse mod a prime, by Fermat: a^(m-2). */
const invert = (a, m = P) => power(a, m - 2n, m);

// -- points: Jacobian (X, Y, Z) stands for the affine (X/Z^2, Y/Z^3); Z = 0 is infinity --------

const INFINITY = [0n, 1n, 0n];

function double([x, y, z]) {
  if (z === 0n || y === 0n) return INFINITY;
  const s = mod(4n * x * y * y);
  const m = mod(3n * x * x); // a = 0 on secp256k1
  const x3 = mod(m * m - 2n * s);
  const y3 = mod(m * (s - x3) - 8n * y * y * y * y);
  return [x3, y3, mod(2n * y * z)];
}

function add(p1, p2) {
  if (p1[2] === 0n) return p2;
  if (p2[2] === 0n) return p1;
  const [x1, y1, z1] = p1;
  const [x2, y2, z2] = p2;
  const z1z1 = mod(z1 * z1);
  const z2z2 = mod(z2 * z2);
  const u1 = mod(x1 * z2z2);
  const u2 = mod(x2 * z1z1);
  const s1 = mod(y1 * z2 * z2z2);
  const s2 = mod(y2 * z1 * z1z1);
  if (u1 === u2) return s1 === s2 ? double(p1) : INFINITY;
  const h = mod(u2 - u1);
  const r = mod(s2 - s1);
  const hh = mod(h * h);
  const hhh = mod(h * hh);
  const x3 = mod(r * r - hhh - 2n * u1 * hh);
  const y3 = mod(r * (u1 * hh - x3) - s1 * hhh);
  return [x3, y3, mod(h * z1 * z2)];
}

function multiply(k, [x, y]) {
  let result = INFINITY;
  let addend = [x, y, 1n];
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) result = add(result, addend);
    addend = double(addend);
  }
  return result;
}

function affine([x, y, z]) {
  const zi = invert(z);
  const zi2 = mod(zi * zi);
  return [mod(x * zi2), mod(y * zi2 * zi)];
}

// -- bytes ----------------------------------------------------------------------------------------

export const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

export function fromHex(hex) {
  const clean = hex.startsWith("0x") ? hex.slice(2) : hex;
  if (clean.length % 2 || /[^0-9a-fA-F]/.test(clean)) throw new Error("not hex");
  return Uint8Array.from(clean.match(/../g) || [], (h) => parseInt(h, 16));
}

const toBigInt = (bytes) => (bytes.length ? BigInt("0x" + toHex(bytes)) : 0n);
const to32 = (n) => fromHex(n.toString(16).padStart(64, "0"));
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

// -- keys -----------------------------------------------------------------------------------------

/** A fresh private key (32 bytes) from the browser's CSPRNG, in [1, N). */
export function randomPrivateKey() {
  for (;;) {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const d = toBigInt(bytes);
    if (d > 0n && d < N) return bytes;
  }
}

/** The uncompressed public key, "0x04" and 128 hex digits: what /auth/register-pubkey takes. */
export function publicKeyOf(privateKey) {
  const [x, y] = affine(multiply(toBigInt(privateKey), G));
  return "0x04" + toHex(to32(x)) + toHex(to32(y));
}

/** The EIP-55 checksummed address of an uncompressed public key ("0x04..."). */
export function addressOf(publicKeyHex) {
  const raw = fromHex(publicKeyHex).slice(1);
  return checksum(toHex(keccak256(raw).slice(12)));
}

/** EIP-55: each letter upper-cased where the keccak of the lowercase address has a high nibble. */
export function checksum(address) {
  const lower = address.toLowerCase().replace(/^0x/, "");
  const hash = toHex(keccak256(new TextEncoder().encode(lower)));
  let out = "0x";
  for (let i = 0; i < 40; i++) out += parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  return out;
}

// -- signing ---------------------------------------------------------------------------------------

async function hmac(key, ...data) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, concat(...data)));
}

/** RFC 6979 section 3.2: the deterministic nonce for this key and digest (qlen = hlen = 256). */
async function* nonces(privateKey, digest) {
  const x = to32(toBigInt(privateKey));
  const h1 = to32(mod(toBigInt(digest), N));
  let v = new Uint8Array(32).fill(1);
  let k = new Uint8Array(32);
  k = await hmac(k, v, [0], x, h1);
  v = await hmac(k, v);
  k = await hmac(k, v, [1], x, h1);
  v = await hmac(k, v);
  for (;;) {
    v = await hmac(k, v);
    const candidate = toBigInt(v);
    if (candidate > 0n && candidate < N) yield candidate;
    k = await hmac(k, v, [0]);
    v = await hmac(k, v);
  }
}

/** The 65-byte signature r || s || v (v = 27 + recovery id) of a 32-byte digest, low s. */
export async function signDigest(privateKey, digest) {
  const d = toBigInt(privateKey);
  const z = mod(toBigInt(digest), N);
  for await (const k of nonces(privateKey, digest)) {
    const [rx, ry] = affine(multiply(k, G));
    const r = mod(rx, N);
    if (r === 0n) continue;
    let s = mod(invert(k, N) * (z + r * d), N);
    if (s === 0n) continue;
    let recovery = Number(ry & 1n) | (rx >= N ? 2 : 0);
    if (s > N / 2n) {
      s = N - s; // the low-s form (EIP-2); flipping s flips the point's parity
      recovery ^= 1;
    }
    return "0x" + toHex(to32(r)) + toHex(to32(s)) + (27 + recovery).toString(16);
  }
  throw new Error("unreachable");
}

/** The EIP-191 digest of a text message: keccak256("\x19Ethereum Signed Message:\n" + len + msg). */
export function personalDigest(message) {
  const body = new TextEncoder().encode(message);
  const prefix = new TextEncoder().encode(`\x19Ethereum Signed Message:\n${body.length}`);
  return keccak256(concat(prefix, body));
}

/** personal_sign with a raw key: what a wallet's signMessage gives for the same text. */
export function signMessage(privateKey, message) {
  return signDigest(privateKey, personalDigest(message));
}
