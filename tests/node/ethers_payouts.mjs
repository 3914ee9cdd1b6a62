// An independent reader for the batch payout tests, built on ethers v6: balances read from the
// node over JSON-RPC, and PaycoreBatchPay calldata decoded from the function's human-readable
// signature (docs/payouts.md), not from paycore's encoder.
//
// Reads {"tasks": [...]} as JSON on stdin and writes one JSON array of results on stdout.
import { Contract, Interface, JsonRpcProvider } from "ethers";

const PAY = new Interface([
  "function pay(bytes32 batch, address[] tokens, address[] recipients, uint256[] amounts) payable",
]);
const ERC20 = ["function balanceOf(address) view returns (uint256)"];

async function run(task) {
  switch (task.op) {
    case "balances": {
      const provider = new JsonRpcProvider(task.rpc, undefined, { staticNetwork: true });
      const out = [];
      for (const { token, address } of task.items) {
        const value = token
          ? await new Contract(token, ERC20, provider).balanceOf(address)
          : await provider.getBalance(address);
        out.push(value.toString());
      }
      provider.destroy();
      return { balances: out };
    }
    case "decode": {
      const [batch, tokens, recipients, amounts] = PAY.decodeFunctionData("pay", task.data);
      return { batch, tokens: [...tokens], recipients: [...recipients], amounts: amounts.map(String) };
    }
    case "encode":
      return { data: PAY.encodeFunctionData("pay", [task.batch, task.tokens, task.recipients, task.amounts]) };
    default:
      throw new Error(`unknown op ${task.op}`);
  }
}

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));
const results = [];
for (const task of input.tasks) results.push(await run(task));
process.stdout.write(JSON.stringify(results));
