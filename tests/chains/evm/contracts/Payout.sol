// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Pays native coin on from inside a transaction, as an exchange's hot wallet, a multisig or
/// a batch payout does: the coin moves in internal calls that no log and no block field
/// shows. A test contract for the watcher's call-trace reading (tests/chains/evm).
contract Payout {
    /// Sends each recipient its amount; a recipient that refuses makes it all revert.
    function pay(address payable[] calldata to, uint256[] calldata amounts) external payable {
        for (uint256 i = 0; i < to.length; i++) {
            (bool ok, ) = to[i].call{value: amounts[i]}("");
            require(ok, "refused");
        }
    }

    /// Sends ``amount`` to ``to`` inside a call that then reverts, and carries on: that
    /// transfer is undone although the transaction succeeds.
    function payThenUndo(address payable to, uint256 amount) external payable {
        try this.payAndRevert{value: amount}(to) {} catch {}
    }

    function payAndRevert(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "refused");
        revert("undone");
    }
}
