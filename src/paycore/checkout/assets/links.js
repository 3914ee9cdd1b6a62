/**
 * Payment links a wallet understands, for the QR code and the "Open in wallet" button.
 *
 * EVM: EIP-681. A native payment is `ethereum:<deposit>@<chainId>?value=<wei>`; an ERC20 one
 * calls the token: `ethereum:<token>@<chainId>/transfer?address=<deposit>&uint256=<units>`.
 * Tron: `tron:<deposit>?amount=<TRX>`. A link is only ever "exact" when every part of it is
 * known; otherwise it holds the address alone and the page says so, because a wallet that
 * guessed the token or its decimals would send the wrong amount.
 */

export const NATIVE = "0x0000000000000000000000000000000000000000";

/** Tron's chain ids: mainnet, Shasta, Nile. */
export const TRON_CHAIN_IDS = new Set([728126428, 2494104990, 3448148188]);

export function isTron(chainId) {
  return TRON_CHAIN_IDS.has(Number(chainId));
}

/**
 * @param {object} p
 * @param {number} p.chainId  the deposit network
 * @param {string} p.deposit  the invoice's deposit address
 * @param {string} p.token    token address, NATIVE for the coin
 * @param {bigint | null} p.baseUnits  amount in the token's base units, null when unknown
 * @param {string | null} p.amountText amount in whole tokens as plain decimal text
 * @returns {{uri: string, exact: boolean}}
 */
export function paymentLink({ chainId, deposit, token, baseUnits, amountText }) {
  const native = token.toLowerCase() === NATIVE;
  if (isTron(chainId)) {
    // tron: links carry no token field wallets agree on: a TRC20 amount would be read as TRX.
    if (native && amountText) return { uri: `tron:${deposit}?amount=${amountText}`, exact: true };
    return { uri: `tron:${deposit}`, exact: false };
  }
  if (baseUnits === null || baseUnits === undefined || baseUnits <= 0n) {
    return { uri: `ethereum:${deposit}@${chainId}`, exact: false };
  }
  if (native) return { uri: `ethereum:${deposit}@${chainId}?value=${baseUnits}`, exact: true };
  return {
    uri: `ethereum:${token}@${chainId}/transfer?address=${deposit}&uint256=${baseUnits}`,
    exact: true,
  };
}
