// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title An ERC20 for test chains only: anyone may mint.
/// @notice Lets tests and the anvil faucet pay invoices in a token without a real one.
///         `decimals` is chosen at deployment (6 like USDC and USDT, 18 like most others), and
///         `returnsBool = false` makes transfer/transferFrom return nothing, as USDT on Ethereum
///         does, so the wallet's handling of such tokens is tested too.
contract TestToken {
    string public name;
    string public symbol;
    uint8 public immutable decimals;
    bool public immutable returnsBool;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error InsufficientBalance(address from, uint256 balance, uint256 needed);
    error InsufficientAllowance(address spender, uint256 allowance, uint256 needed);

    constructor(string memory name_, string memory symbol_, uint8 decimals_, bool returnsBool_) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        returnsBool = returnsBool_;
    }

    /// @notice Creates `amount` new tokens for `to`. Unrestricted: this is a test token.
    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return _result();
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert InsufficientAllowance(msg.sender, allowed, amount);
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return _result();
    }

    function _move(address from, address to, uint256 amount) private {
        uint256 balance = balanceOf[from];
        if (balance < amount) revert InsufficientBalance(from, balance, amount);
        balanceOf[from] = balance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }

    /// @dev `true`, or, for a USDT-like token, an empty return: assembly ends the call with no
    ///      return data, which a Solidity `return` cannot express in a function typed `bool`.
    function _result() private view returns (bool) {
        if (!returnsBool) {
            assembly {
                return(0, 0)
            }
        }
        return true;
    }
}
