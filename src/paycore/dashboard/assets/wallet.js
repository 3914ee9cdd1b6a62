/** The owner's injected wallet (EIP-1193 `window.ethereum`): it sends the unsigned
 *  transactions paycore builds (a withdrawal, a refund). paycore never signs them. */

/** Send `tx` ({to, data, value, gas, gasPrice, chainId}) from `from`; the transaction hash.
 *  The wallet is asked to switch to the transaction's chain first when it is elsewhere; the
 *  nonce is the wallet's to choose (it knows its own pending transactions). */
export async function sendTransaction(ethereum, from, tx) {
  if (!ethereum) throw new Error("no-wallet");
  const chain = Number(tx.chainId);
  const current = parseInt(await ethereum.request({ method: "eth_chainId" }), 16);
  if (current !== chain) {
    await ethereum.request({ method: "wallet_switchEthereumChain", params: [{ chainId: "0x" + chain.toString(16) }] });
  }
  const params = { from, to: tx.to, data: tx.data, value: tx.value };
  if (tx.gas) params.gas = tx.gas;
  if (tx.gasPrice) params.gasPrice = tx.gasPrice;
  return ethereum.request({ method: "eth_sendTransaction", params: [params] });
}
