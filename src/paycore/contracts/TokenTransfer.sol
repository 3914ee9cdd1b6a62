// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The two ERC20 functions paycore's contracts call.
interface IERC20Minimal {
    function balanceOf(address account) external view returns (uint256);

    function transfer(address to, uint256 amount) external returns (bool);
}

/// @title Moves native coin or an ERC20 token, whichever `token` names.
/// @notice paycore names the native coin by the zero address (the interface's token ids), so every
///         contract that pays out takes one `token` argument and branches here, once.
library TokenTransfer {
    /// @notice A native transfer or an ERC20 `transfer` did not go through.
    error TransferFailed(address token, address to, uint256 amount);

    /// @notice The balance of `account` in `token` (native coin for the zero address).
    function balanceOf(address token, address account) internal view returns (uint256) {
        if (token == address(0)) {
            return account.balance;
        }
        return IERC20Minimal(token).balanceOf(account);
    }

    /// @notice Sends `amount` of `token` to `to`, reverting when the transfer fails.
    /// @dev Native coin goes with all remaining gas: `to` may be a contract wallet whose
    ///      receive() needs more than the 2300-gas stipend. ERC20 transfers accept tokens that
    ///      return nothing (USDT on Ethereum does) as well as those returning `true`; a token
    ///      address without code is refused, since a call to it would "succeed" moving nothing.
    function send(address token, address to, uint256 amount) internal {
        if (token == address(0)) {
            (bool sent, ) = payable(to).call{value: amount}("");
            if (!sent) revert TransferFailed(token, to, amount);
            return;
        }
        if (token.code.length == 0) revert TransferFailed(token, to, amount);
        (bool ok, bytes memory data) = token.call(
            abi.encodeCall(IERC20Minimal.transfer, (to, amount))
        );
        if (!ok || (data.length != 0 && !abi.decode(data, (bool)))) {
            revert TransferFailed(token, to, amount);
        }
    }
}
