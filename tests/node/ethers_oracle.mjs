// An independent client for paycore's auth tests, built on ethers v6 and Node's own JSON.
//
// Reads {"tasks": [...]} as JSON on stdin and writes one JSON array of results on stdout.
// Each task builds its signed text the way a browser client would (from the rules of docs/interface.md,
// not from paycore's code), so the Python side is checked against a second implementation
// rather than against itself.
import { createHash } from "node:crypto";
import { Wallet } from "ethers";

const sha256hex = (text) => createHash("sha256").update(text, "utf8").digest("hex");

async function run(task) {
  const wallet = task.privateKey ? new Wallet(task.privateKey) : null;
  switch (task.op) {
    case "key":
      return { address: wallet.address, publicKey: wallet.signingKey.publicKey };
    case "sign": {
      const signature = await wallet.signMessage(task.message);
      return { message: task.message, signature };
    }
    case "stringify":
      return { text: JSON.stringify(JSON.parse(task.json)) };
    case "session": {
      const hashed = task.method.toUpperCase() === "GET" ? task.uri : task.body;
      const message = `sess:${task.nonce}:${sha256hex(hashed)}`;
      const signature = await wallet.signMessage(message);
      return {
        message,
        headers: { "x-session-nonce": String(task.nonce), "x-session-signature": signature },
      };
    }
    case "wallet": {
      const owner = task.owner.toLowerCase();
      const message = {
        "set-webhook": () => `set-webhook:${owner}:${task.url}`,
        "get-webhook": () => `get-webhook:${owner}`,
        "clear-webhook": () => `clear-webhook:${owner}`,
        "poll-register": () => `poll-register:${owner}`,
        "deregister-pubkey": () => `deregister-pubkey:${task.publicKey.toLowerCase()}`,
        "register-pubkey": () => task.publicKey,
      }[task.kind]();
      return { message, signature: await wallet.signMessage(message) };
    }
    case "salted": {
      // The client's object, as JSON.parse builds it from the given text, plus the salt.
      const body = JSON.parse(task.json);
      body.salt = task.salt;
      const message = JSON.stringify(body);
      body.signature = await wallet.signMessage(message);
      return { message, requestBody: JSON.stringify(body) };
    }
    default:
      throw new Error(`unknown op ${task.op}`);
  }
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { tasks } = JSON.parse(input);
const results = [];
for (const task of tasks) results.push(await run(task));
process.stdout.write(JSON.stringify(results));
