// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The one ERC20 function a batch payout calls.
interface IERC20TransferFrom {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @title Pays many recipients in one transaction, straight from the sender's own funds.
/// @notice Non-custodial by construction: the contract holds nothing between calls. Native
///         coin arrives as msg.value and leaves in the same call; ERC20 rows move with
///         transferFrom(msg.sender, recipient, amount), so only what the sender approved to
///         this contract can move, and only by the sender's own transaction -- nobody else can
///         spend a merchant's allowance, because `from` is always msg.sender.
///         All rows or none: any failed row reverts the whole call, so a confirmed transaction
///         means every one of its rows was paid, which is what paycore's confirm step relies on.
contract PaycoreBatchPay {
    /// @notice The three arrays differ in length.
    error LengthMismatch();
    /// @notice msg.value differs from the sum of the native rows.
    error NativeValueMismatch(uint256 sent, uint256 paid);
    /// @notice Row `row` did not go through (a refused native payment, a failed transferFrom
    ///         or a token address without code).
    error TransferFailed(uint256 row);

    /// @notice One per call: `batch` is the caller's reference for the rows paid.
    event BatchPaid(address indexed payer, bytes32 indexed batch, uint256 rows);

    /// @notice Pays `amounts[i]` of `tokens[i]` (the zero address: native coin) to
    ///         `recipients[i]` from msg.sender, for every i.
    function pay(
        bytes32 batch,
        address[] calldata tokens,
        address[] calldata recipients,
        uint256[] calldata amounts
    ) external payable {
        uint256 n = recipients.length;
        if (tokens.length != n || amounts.length != n) revert LengthMismatch();
        uint256 native;
        for (uint256 i; i < n; ) {
            address token = tokens[i];
            if (token == address(0)) {
                native += amounts[i];
                // All remaining gas: a recipient may be a contract wallet whose receive() needs
                // more than the stipend. Re-entry gains nothing: the contract holds no funds.
                (bool sent, ) = payable(recipients[i]).call{value: amounts[i]}("");
                if (!sent) revert TransferFailed(i);
            } else {
                if (token.code.length == 0) revert TransferFailed(i);
                (bool ok, bytes memory data) = token.call(
                    abi.encodeCall(
                        IERC20TransferFrom.transferFrom,
                        (msg.sender, recipients[i], amounts[i])
                    )
                );
                // Tokens that return nothing (USDT on Ethereum) pass, as do those returning true.
                if (!ok || (data.length != 0 && !abi.decode(data, (bool)))) {
                    revert TransferFailed(i);
                }
            }
            unchecked {
                ++i;
            }
        }
        if (native != msg.value) revert NativeValueMismatch(msg.value, native);
        emit BatchPaid(msg.sender, batch, n);
    }
}
