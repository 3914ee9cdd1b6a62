// The dashboard's pure logic on the shipped modules: the text match of the invoice search
// (used when the server has no search of its own), the deposits-per-day series of the chart,
// the token symbol a row shows, and the billing views' plan body, refused payout rows and
// the order the wallet sends a batch in, the webhook endpoint bodies and the app key texts. Reads {"tasks": [...]} on stdin, writes a JSON array.
import { matches, tokenSymbol } from "../../src/paycore/dashboard/assets/views.js";
import { perDay } from "../../src/paycore/dashboard/assets/money.js";
import { badRows, payoutCalls, planBody } from "../../src/paycore/dashboard/assets/billing.js";
import { endpointBody, parseTypes } from "../../src/paycore/dashboard/assets/endpoints.js";
import { addBody, consentText, removeBody } from "../../src/paycore/dashboard/assets/appkeys.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const task of JSON.parse(input).tasks) {
  if (task.op === "matches") out.push(matches(task.invoice, task.text));
  else if (task.op === "perDay") out.push(perDay(task.items, task.now, task.days));
  else if (task.op === "symbol") out.push(tokenSymbol(task.invoice, task.tokenId));
  else if (task.op === "badRows") out.push(badRows(task.text));
  else if (task.op === "payoutCalls") out.push(payoutCalls(task.answer));
  else if (task.op === "planBody") out.push(planBody(task.values));
  else if (task.op === "endpointBody") out.push(endpointBody(task.values));
  else if (task.op === "parseTypes") out.push(parseTypes(task.text));
  else if (task.op === "consentText") out.push(consentText(task.owner, task.key, task.salt));
  else if (task.op === "addBody") out.push(JSON.stringify(addBody(task.owner, task.key, task.consent, task.salt)));
  else if (task.op === "removeBody") out.push(JSON.stringify(removeBody(task.owner, task.key, task.salt)));
  else throw new Error(`unknown op ${task.op}`);
}
process.stdout.write(JSON.stringify(out));
