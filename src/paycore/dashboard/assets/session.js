/**
 * The dashboard's session: a secp256k1 key made in this browser, registered by the owner's
 * wallet, that signs every call to paycore (docs/interface.md, "Session-signed requests").
 *
 * Where the key lives: sessionStorage, so a reload of the tab keeps the session for its
 * validity and closing the tab forgets it. It cannot be a non-extractable CryptoKey:
 * WebCrypto has no secp256k1, so the key is bytes a script of this origin could read. The
 * page's Content-Security-Policy (this origin's scripts only) is what guards it, and
 * sign-out deregisters it on the server, so a copied key is worth nothing afterwards.
 * The key is never sent: only its public half, and signatures made with it.
 */

import { publicKeyOf, randomPrivateKey, signMessage, toHex, fromHex, addressOf } from "./secp256k1.js";

const STORE = "paycore-dashboard-session";

/** The API base ("{prefix}/") seen from this module at {prefix}/dashboard/assets/. */
export const API = new URL("../../", import.meta.url);

export class HttpError extends Error {
  constructor(status, text) {
    super(text || `HTTP ${status}`);
    this.status = status;
  }
}

const sha256hex = async (bytes) => toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

/** The stored session, or null when there is none or it has run out. */
export function load(storage = globalThis.sessionStorage) {
  try {
    const saved = JSON.parse(storage.getItem(STORE) || "null");
    if (!saved || !saved.key || !saved.owner) return null;
    if (saved.expiresAt && saved.expiresAt * 1000 <= Date.now()) {
      storage.removeItem(STORE);
      return null;
    }
    return new Session(saved.owner, fromHex(saved.key), saved.expiresAt, storage);
  } catch {
    return null;
  }
}

/** The text the wallet signs, as personal_sign's hex parameter: the UTF-8 bytes of `text`.
 *  Why hex: a wallet treats a "0x..." string as bytes, and a public key starts with "0x". */
export const personalSignParam = (text) => "0x" + toHex(new TextEncoder().encode(text));

/**
 * Sign in: the wallet names its account, signs the new key's public half (the text of
 * POST /auth/register-pubkey), and paycore binds the key to that owner.
 */
export async function signIn(ethereum, storage = globalThis.sessionStorage) {
  if (!ethereum || typeof ethereum.request !== "function") throw new Error("no-wallet");
  const accounts = await ethereum.request({ method: "eth_requestAccounts" });
  if (!accounts || !accounts.length) throw new Error("no-account");
  const owner = accounts[0];
  const key = randomPrivateKey();
  const publicKey = publicKeyOf(key);
  const signature = await ethereum.request({
    method: "personal_sign",
    params: [personalSignParam(publicKey), owner],
  });
  return register({ ownerAddress: owner, publicKey, signature }, key, storage);
}

/** TronLink's TronWeb, when the page has one: window.tronLink.tronWeb (newer TronLink) or
 *  window.tronWeb (older, and TronWeb-based wallets); null otherwise. */
export function tronWebOf(win = globalThis) {
  const tronWeb = (win.tronLink && win.tronLink.tronWeb) || win.tronWeb;
  return tronWeb && tronWeb.trx && typeof tronWeb.trx.signMessageV2 === "function" ? tronWeb : null;
}

/**
 * The body of POST /auth/register-pubkey for a Tron owner: TronLink signs the public key's
 * text with signMessageV2 (TIP-191, "\x19TRON Signed Message:\n" + length + text), which
 * is what paycore verifies for a base58 owner (auth/tron.py). The owner is TronLink's
 * selected account, asked for first (tron_requestAccounts) so a locked TronLink opens.
 */
export async function tronRegistration(win, publicKey) {
  if (win.tronLink && typeof win.tronLink.request === "function") {
    const answer = await win.tronLink.request({ method: "tron_requestAccounts" });
    if (answer && answer.code === 4001) throw Object.assign(new Error("rejected"), { code: 4001 });
  }
  const tronWeb = tronWebOf(win);
  if (!tronWeb) throw new Error("no-wallet");
  const owner = tronWeb.defaultAddress && tronWeb.defaultAddress.base58;
  if (!owner) throw new Error("no-account");
  const signature = await tronWeb.trx.signMessageV2(publicKey);
  return { ownerAddress: owner, publicKey, signature };
}

/** Sign in with TronLink: as signIn, only the owner is a Tron address and TronLink signs. */
export async function signInTron(win = globalThis, storage = globalThis.sessionStorage) {
  const key = randomPrivateKey();
  return register(await tronRegistration(win, publicKeyOf(key)), key, storage);
}

/** POST /auth/register-pubkey with `body`; the session of `key` once paycore bound it. */
async function register(body, key, storage) {
  const response = await fetch(new URL("auth/register-pubkey", API), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new HttpError(response.status, text);
  const answer = JSON.parse(text);
  const session = new Session(answer.ownerAddress, key, answer.expiresAt, storage);
  session.save();
  return session;
}

export class Session {
  constructor(owner, key, expiresAt, storage) {
    this.owner = owner;
    this.key = key;
    this.expiresAt = expiresAt;
    this.storage = storage;
    this.publicKey = publicKeyOf(key);
    this.address = addressOf(this.publicKey);
    this.lastNonce = 0;
  }

  save() {
    this.storage.setItem(STORE, JSON.stringify({ owner: this.owner, key: toHex(this.key), expiresAt: this.expiresAt }));
  }

  forget() {
    this.storage.removeItem(STORE);
  }

  /** A nonce above every one this tab used: the millisecond clock, nudged when two share it. */
  nonce() {
    this.lastNonce = Math.max(Date.now(), this.lastNonce + 1);
    return this.lastNonce;
  }

  /** The two session headers for a request: the key signs `sess:{nonce}:{sha256 hex}` of the
   *  body (POST) or of the path and query as sent (GET). */
  async headers(method, url, body) {
    const nonce = this.nonce();
    const covered = method === "GET" ? new TextEncoder().encode(url.pathname + url.search) : body;
    const signature = await signMessage(this.key, `sess:${nonce}:${await sha256hex(covered)}`);
    return { "x-session-nonce": String(nonce), "x-session-signature": signature };
  }

  /** A signed request; the raw Response (for the export's download) when `raw`. */
  async call(method, path, { query = null, json = undefined, raw = false, headers = {} } = {}) {
    const url = new URL(path, API);
    for (const [name, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
    }
    const body = json === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(json));
    const signed = await this.headers(method, url, body);
    const response = await fetch(url, {
      method,
      headers: { ...headers, ...signed, ...(json === undefined ? {} : { "content-type": "application/json" }) },
      body: method === "GET" ? undefined : body,
      cache: "no-store",
    });
    if (!response.ok) {
      // the message is the first 300 characters; a refused payout upload names every bad
      // row on its own line, so the whole text is kept for the view that lists them
      const text = await response.text();
      const error = new HttpError(response.status, text.slice(0, 300));
      error.body = text;
      throw error;
    }
    if (raw) return response;
    return response.json();
  }

  get(path, query) {
    return this.call("GET", path, { query });
  }

  post(path, json, headers = {}) {
    return this.call("POST", path, { json, headers });
  }

  /** Sign out: the key itself asks paycore to drop it, then the browser forgets it. */
  async signOut() {
    try {
      await this.post("auth/deregister-pubkey", { publicKey: this.publicKey });
    } finally {
      this.forget();
    }
  }
}
