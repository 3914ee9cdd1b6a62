// An independent ECIES client for paycore's encryption tests, built on eth-crypto alone.
//
// Reads one JSON object on stdin and writes one JSON object on stdout:
//   {"privateKey": "0x..", "encrypted": {iv, ephemPublicKey, ciphertext, mac} | "<compact>"}
//     -> the plaintext from decryptWithPrivateKey, written as UTF-8 exactly (no newline)
//   {"op": "encrypt", "publicKey": "04..", "message": "<text>"}
//     -> {"encrypted": {iv, ephemPublicKey, ciphertext, mac}, "compact": "<cipher.stringify>"}
// The decrypt form is the one a browser client runs on paycore's encrypted responses, so the
// Python side is checked against the library clients use, not against itself.
// Errors go to stderr with exit code 1 (a bad MAC is an error, never an empty plaintext).
import EthCrypto from "eth-crypto";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function run(task) {
  if (task.op === "encrypt") {
    const encrypted = await EthCrypto.encryptWithPublicKey(task.publicKey, task.message);
    return { encrypted, compact: EthCrypto.cipher.stringify(encrypted) };
  }
  return EthCrypto.decryptWithPrivateKey(task.privateKey, task.encrypted);
}

try {
  const result = await run(JSON.parse(await readStdin()));
  process.stdout.write(typeof result === "string" ? result : JSON.stringify(result));
} catch (error) {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exitCode = 1;
}
