// The dashboard's own secp256k1 and keccak256 (src/paycore/dashboard/assets), run in Node on
// the shipped modules. Reads {"tasks": [...]} on stdin, writes one JSON array: the Python
// test compares each result with ethers (tests/node/ethers_oracle.mjs) and Python's keccak.
import { keccak256 } from "../../src/paycore/dashboard/assets/keccak.js";
import { addressOf, fromHex, publicKeyOf, signMessage, toHex } from "../../src/paycore/dashboard/assets/secp256k1.js";
import { personalSignParam } from "../../src/paycore/dashboard/assets/session.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const task of JSON.parse(input).tasks) {
  if (task.op === "keccak") out.push({ hash: toHex(keccak256(fromHex(task.hex))) });
  else if (task.op === "key") {
    const publicKey = publicKeyOf(fromHex(task.privateKey));
    out.push({ publicKey, address: addressOf(publicKey) });
  } else if (task.op === "sign") out.push({ signature: await signMessage(fromHex(task.privateKey), task.message) });
  else if (task.op === "param") out.push({ param: personalSignParam(task.message) });
  else throw new Error(`unknown op ${task.op}`);
}
process.stdout.write(JSON.stringify(out));
