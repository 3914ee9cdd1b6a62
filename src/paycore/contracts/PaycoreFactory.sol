// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {PaycoreWallet} from "./PaycoreWallet.sol";

/// @title One per chain: deploys merchants' wallets at predictable addresses and holds the
///        operator's withdrawal fee.
/// @notice A merchant's wallet address is CREATE2(factory, bytes32(owner), keccak256(wallet
///         init code ++ abi.encode(owner))), so paycore can hand out deposit addresses before
///         the owner ever sends a transaction. Anyone may deploy the wallet of any owner: the
///         owner is fixed by the argument, so a sponsored deployment gives nobody else a right.
///         The fee can never exceed `maxWithdrawFee`, fixed at deployment, so merchants can see
///         that the operator cannot price them out of their own funds later.
contract PaycoreFactory {
    /// @notice May change the fee settings and hand this role on.
    address public admin;
    /// @notice Receives the native fee of every withdrawal; the zero address turns fees off.
    address public feeRecipient;
    /// @notice Native coin (wei) charged per withdrawal, paid from the withdrawal's msg.value.
    uint256 public withdrawFee;
    /// @notice The highest `withdrawFee` the admin may ever set; immutable by design.
    uint256 public immutable maxWithdrawFee;
    /// @notice The CREATE2 address prefix of the VM this factory runs on: 0xff on EVM chains,
    ///         0x41 on Tron (TVM). Fixed at deployment; wallets copy it.
    bytes1 public immutable create2Prefix;

    event WalletDeployed(address indexed owner, address indexed wallet);
    event FeeChanged(address indexed recipient, uint256 fee);
    event AdminChanged(address indexed previousAdmin, address indexed newAdmin);

    /// @notice The caller is not the admin.
    error NotAdmin();
    /// @notice The owner already has a wallet under this factory.
    error WalletExists(address owner, address wallet);
    /// @notice The zero address cannot own a wallet or administer the factory.
    error ZeroAddress();
    /// @notice A fee above `maxWithdrawFee` was asked for.
    error FeeTooHigh(uint256 fee, uint256 maxFee);
    /// @notice Neither 0xff (EVM) nor 0x41 (TVM).
    error UnknownCreate2Prefix(bytes1 prefix);

    /// @param initialAdmin Who may change the fee settings. Named, not taken from
    ///        msg.sender: deployed through a CREATE2 deployer, msg.sender is that contract,
    ///        and the argument is part of the address, so nobody can deploy the same
    ///        address with another admin.
    /// @param initialFeeRecipient Receives the withdrawal fee; the zero address turns it off.
    /// @param initialWithdrawFee The fee per withdrawal in the native coin's base units.
    /// @param maxFee The cap on every later fee, fixed for good.
    /// @param prefix The VM's CREATE2 prefix: 0xff on EVM chains, 0x41 on Tron.
    constructor(
        address initialAdmin,
        address initialFeeRecipient,
        uint256 initialWithdrawFee,
        uint256 maxFee,
        bytes1 prefix
    ) {
        if (initialAdmin == address(0)) revert ZeroAddress();
        if (initialWithdrawFee > maxFee) revert FeeTooHigh(initialWithdrawFee, maxFee);
        if (prefix != 0xff && prefix != 0x41) revert UnknownCreate2Prefix(prefix);
        create2Prefix = prefix;
        maxWithdrawFee = maxFee;
        admin = initialAdmin;
        feeRecipient = initialFeeRecipient;
        withdrawFee = initialWithdrawFee;
        emit AdminChanged(address(0), initialAdmin);
        emit FeeChanged(initialFeeRecipient, initialWithdrawFee);
    }

    /// @notice Creates `owner`'s wallet at `walletAddress(owner)`.
    function deployWallet(address owner) external returns (address wallet) {
        if (owner == address(0)) revert ZeroAddress();
        address expected = walletAddress(owner);
        if (expected.code.length != 0) revert WalletExists(owner, expected);
        wallet = address(new PaycoreWallet{salt: _salt(owner)}(owner));
        emit WalletDeployed(owner, wallet);
    }

    /// @notice Where `owner`'s wallet is, or will be once deployed.
    function walletAddress(address owner) public view returns (address) {
        bytes32 initCodeHash = keccak256(
            abi.encodePacked(type(PaycoreWallet).creationCode, abi.encode(owner))
        );
        bytes32 digest = keccak256(
            abi.encodePacked(create2Prefix, address(this), _salt(owner), initCodeHash)
        );
        return address(uint160(uint256(digest)));
    }

    /// @notice Sets who receives the withdrawal fee and how much it is, in wei, up to
    ///         `maxWithdrawFee`.
    function setFee(address recipient, uint256 fee) external {
        if (msg.sender != admin) revert NotAdmin();
        if (fee > maxWithdrawFee) revert FeeTooHigh(fee, maxWithdrawFee);
        feeRecipient = recipient;
        withdrawFee = fee;
        emit FeeChanged(recipient, fee);
    }

    /// @notice Hands the admin role to `newAdmin`.
    function changeAdmin(address newAdmin) external {
        if (msg.sender != admin) revert NotAdmin();
        if (newAdmin == address(0)) revert ZeroAddress();
        emit AdminChanged(admin, newAdmin);
        admin = newAdmin;
    }

    /// @notice What a wallet reads before charging: the recipient and the fee in one call.
    function feeSettings() external view returns (address recipient, uint256 fee) {
        return (feeRecipient, withdrawFee);
    }

    function _salt(address owner) private pure returns (bytes32) {
        return bytes32(uint256(uint160(owner)));
    }
}
