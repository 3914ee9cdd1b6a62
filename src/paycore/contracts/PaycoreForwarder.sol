// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TokenTransfer} from "./TokenTransfer.sol";

/// @title One invoice deposit address, as a contract that can only give to its wallet.
/// @notice A payer sends native coin or tokens to `PaycoreWallet.depositAddress(index)` before
///         any code lives there. At withdrawal the wallet deploys this contract at that address
///         with CREATE2 and sweeps it in the same transaction; later deposits to the same address
///         are swept again by later withdrawals, so nothing is ever stuck.
/// @dev The constructor takes no argument on purpose: the deposit address is
///      CREATE2(wallet, index, keccak256(init code)), and a constructor argument (a token, say)
///      would be part of the init code and give every token a different address. The wallet is
///      an immutable, which lives in the runtime code, not in the init code.
contract PaycoreForwarder {
    /// @notice The only account this forwarder pays and takes orders from: its deployer.
    address public immutable wallet;

    /// @notice Someone other than the wallet asked for a sweep.
    error NotWallet();

    constructor() {
        wallet = msg.sender;
    }

    /// @notice Accepts native coin sent to an already deployed deposit address.
    /// @dev Empty on purpose, so a plain transfer with the 2300-gas stipend still lands.
    receive() external payable {}

    /// @notice Moves this forwarder's whole balance of `token` (zero address: native coin)
    ///         to the wallet.
    /// @return amount What was moved; zero when there was nothing.
    function sweep(address token) external returns (uint256 amount) {
        if (msg.sender != wallet) revert NotWallet();
        amount = TokenTransfer.balanceOf(token, address(this));
        if (amount != 0) {
            TokenTransfer.send(token, wallet, amount);
        }
    }
}
