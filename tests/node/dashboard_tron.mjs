// The dashboard's "Sign in with TronLink" body, built by the shipped session.js against a
// TronLink stand-in whose signer is TronWeb itself (the SDK TronLink injects), holding the
// task's private key. Reads {"tasks": [...]} on stdin, writes a JSON array of bodies (or
// {error} when the page refuses to build one).
import { TronWeb } from "tronweb";
import { tronRegistration, tronWebOf } from "../../src/paycore/dashboard/assets/session.js";

function standIn(task) {
  // No node is reachable there: signing a message needs none, and nothing else is asked.
  const tronWeb = new TronWeb({ fullHost: "http://127.0.0.1:9", privateKey: task.privateKey.replace(/^0x/, "") });
  const requests = [];
  const win = task.legacy
    ? { tronWeb }
    : { tronLink: { ready: true, tronWeb, request: async (args) => (requests.push(args), { code: task.answer || 200 }) } };
  return { win, requests };
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const task of JSON.parse(input).tasks) {
  if (task.op === "none") {
    out.push({ found: tronWebOf({}) !== null, foundEthereumOnly: tronWebOf({ ethereum: {} }) !== null });
    continue;
  }
  const { win, requests } = standIn(task);
  try {
    const body = await tronRegistration(win, task.publicKey);
    out.push({ body, requests });
  } catch (error) {
    out.push({ error: error.message, code: error.code ?? null, requests });
  }
}
process.stdout.write(JSON.stringify(out));
