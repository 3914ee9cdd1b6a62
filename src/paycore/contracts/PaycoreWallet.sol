// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {PaycoreForwarder} from "./PaycoreForwarder.sol";
import {TokenTransfer} from "./TokenTransfer.sol";

/// @notice What a wallet asks its factory: who gets the operator's fee, and how much.
interface IPaycoreFees {
    function feeSettings() external view returns (address recipient, uint256 fee);
    function create2Prefix() external view returns (bytes1);
}

/// @title A merchant's non-custodial wallet: collects invoice deposits and pays them out.
/// @notice Every invoice gets its own deposit address, `depositAddress(index)`, which is a
///         forwarder not yet deployed. `withdraw` deploys the forwarders it needs, pulls their
///         balances in, pays the recipient and charges the operator's native-coin fee, all in
///         one transaction signed by the owner or one of its app keys. paycore itself never
///         holds a key that can move these funds.
/// @dev App keys (docs/interface.md, App keys): at most 10. Before any app key exists only the owner can
///      add one, so the owner (the wallet's deployer) creates the first; after
///      that an app key acts for the owner, adding keys and withdrawing included (the owner
///      keeps every right). Only the owner removes keys: a leaked app key cannot remove the
///      others, and the owner can always cut it off.
contract PaycoreWallet {
    /// @notice The most app keys a wallet holds at once.
    uint256 public constant MAX_APP_KEYS = 10;

    /// @notice The merchant: fixed at deployment, and the salt of this wallet's address.
    address public immutable owner;
    /// @notice The factory that deployed this wallet and holds the operator's fee settings.
    IPaycoreFees public immutable factory;
    /// @notice The CREATE2 address prefix of this chain's VM, copied from the factory: 0xff on
    ///         EVM chains, 0x41 on Tron. Deposit addresses must match where `new` deploys.
    bytes1 public immutable create2Prefix;
    /// @notice keccak256 of the forwarder's init code: the third input of every deposit address.
    bytes32 public immutable forwarderInitCodeHash;

    address[] private _appKeys;
    /// @notice Whether `key` may act for the owner.
    mapping(address key => bool) public isAppKey;
    /// @notice Disabled indexes are skipped by `withdraw` (docs/interface.md, /disableWalletIndex).
    mapping(uint256 index => bool) public isWalletIndexDisabled;

    event AppKeyAdded(address indexed key, address indexed addedBy);
    event AppKeyRemoved(address indexed key);
    event WalletIndexDisabled(uint256 indexed index);
    event WalletIndexEnabled(uint256 indexed index);
    /// @notice A forwarder's balance of `token` moved into this wallet.
    event Collected(
        uint256 indexed index, address indexed forwarder, address indexed token, uint256 amount
    );
    /// @notice `amount` of `token` paid to `to`; `fee` wei went to the operator.
    event Withdrawn(address indexed token, address indexed to, uint256 amount, uint256 fee);

    /// @notice Only the owner may do this.
    error NotOwner();
    /// @notice Only the owner or an app key may do this.
    error NotOwnerOrAppKey();
    /// @notice The wallet already holds `MAX_APP_KEYS` app keys.
    error TooManyAppKeys();
    error AppKeyExists(address key);
    error UnknownAppKey(address key);
    error ZeroAddress();
    /// @notice msg.value did not cover the operator's withdrawal fee.
    error FeeNotPaid(uint256 required, uint256 sent);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    modifier onlyOwnerOrAppKey() {
        if (msg.sender != owner && !isAppKey[msg.sender]) revert NotOwnerOrAppKey();
        _;
    }

    constructor(address walletOwner) {
        owner = walletOwner;
        factory = IPaycoreFees(msg.sender);
        create2Prefix = IPaycoreFees(msg.sender).create2Prefix();
        forwarderInitCodeHash = keccak256(type(PaycoreForwarder).creationCode);
    }

    /// @notice Accepts native coin: direct deposits (contractType `wallet`) and sweeps.
    receive() external payable {}

    // ---------------------------------------------------------------- deposit addresses

    /// @notice The deposit address number `index`: CREATE2(this, bytes32(index), forwarder).
    function depositAddress(uint256 index) public view returns (address) {
        bytes32 digest = keccak256(
            abi.encodePacked(create2Prefix, address(this), bytes32(index), forwarderInitCodeHash)
        );
        return address(uint160(uint256(digest)));
    }

    // ---------------------------------------------------------------- withdrawal

    /// @notice Collects `token` from the deposit addresses at `indexes` (disabled ones are
    ///         skipped), then pays `amount` of it from this wallet to `to`.
    /// @dev msg.value must cover the operator's fee, read from the factory; whatever it brings
    ///      beyond the fee stays in this wallet, which is the owner's anyway. `token` is the zero
    ///      address for the native coin. The payout may draw on funds collected earlier.
    function withdraw(address token, address to, uint256 amount, uint256[] calldata indexes)
        external
        payable
        onlyOwnerOrAppKey
    {
        if (to == address(0)) revert ZeroAddress();
        (address feeRecipient, uint256 fee) = factory.feeSettings();
        if (feeRecipient == address(0)) fee = 0;
        if (msg.value < fee) revert FeeNotPaid(fee, msg.value);

        for (uint256 i = 0; i < indexes.length; ++i) {
            if (!isWalletIndexDisabled[indexes[i]]) {
                _collect(token, indexes[i]);
            }
        }
        if (fee != 0) TokenTransfer.send(address(0), feeRecipient, fee);
        if (amount != 0) TokenTransfer.send(token, to, amount);
        emit Withdrawn(token, to, amount, fee);
    }

    /// @dev Deploys the forwarder at `index` if needed, then sweeps it: a first deposit and any
    ///      later one to the same address are collected the same way.
    function _collect(address token, uint256 index) private {
        address forwarder = depositAddress(index);
        if (forwarder.code.length == 0) {
            // Sweep where `new` really deployed, whatever the VM's CREATE2 rule.
            forwarder = address(new PaycoreForwarder{salt: bytes32(index)}());
        }
        uint256 amount = PaycoreForwarder(payable(forwarder)).sweep(token);
        if (amount != 0) emit Collected(index, forwarder, token, amount);
    }

    // ---------------------------------------------------------------- management

    /// @notice Leaves `index` out of every later withdrawal until it is enabled again.
    function disableWalletIndex(uint256 index) external onlyOwnerOrAppKey {
        isWalletIndexDisabled[index] = true;
        emit WalletIndexDisabled(index);
    }

    /// @notice Lets withdrawals collect `index` again.
    function enableWalletIndex(uint256 index) external onlyOwnerOrAppKey {
        isWalletIndexDisabled[index] = false;
        emit WalletIndexEnabled(index);
    }

    // ---------------------------------------------------------------- app keys

    /// @notice Lets `key` act for the owner. The first key can only come from the owner, since
    ///         no app key exists yet to add it.
    function addAppKey(address key) external onlyOwnerOrAppKey {
        if (key == address(0)) revert ZeroAddress();
        if (isAppKey[key]) revert AppKeyExists(key);
        if (_appKeys.length >= MAX_APP_KEYS) revert TooManyAppKeys();
        isAppKey[key] = true;
        _appKeys.push(key);
        emit AppKeyAdded(key, msg.sender);
    }

    /// @notice Takes `key`'s rights away. Owner only.
    function removeAppKey(address key) external onlyOwner {
        if (!isAppKey[key]) revert UnknownAppKey(key);
        isAppKey[key] = false;
        uint256 last = _appKeys.length - 1;
        for (uint256 i = 0; i < last; ++i) {
            if (_appKeys[i] == key) {
                _appKeys[i] = _appKeys[last];
                break;
            }
        }
        _appKeys.pop();
        emit AppKeyRemoved(key);
    }

    /// @notice The current app keys, in no particular order.
    function appKeys() external view returns (address[] memory) {
        return _appKeys;
    }
}
