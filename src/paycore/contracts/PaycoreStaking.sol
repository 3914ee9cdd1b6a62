// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The ERC20 functions the staking contract calls.
interface IERC20Staked {
    function balanceOf(address account) external view returns (uint256);

    function transfer(address to, uint256 amount) external returns (bool);

    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @title A reference token staking program with rewards in ETH (docs/interface.md, Staking helpers).
/// @notice Holders stake any ERC20 token and unstake it whenever they like. The admin funds
///         rewards for one token at a time by sending ETH to `fundRewards(token)`; the ETH is
///         shared among that token's stakers in proportion to their stake at that moment.
///         A staker claims the rewards of a list of tokens in one transaction.
/// @dev The classic "reward per token" accumulator: `rewardPerToken[token]` only grows (ETH wei
///      per staked base unit, scaled by 1e18), and each staker remembers the value it last
///      settled at, so funding costs O(1) however many stakers there are. Staked tokens are
///      never lent, moved or touched by the admin: the admin can only add ETH.
contract PaycoreStaking {
    /// @notice Scale of `rewardPerToken`, so small rewards over large stakes do not round to 0.
    uint256 public constant PRECISION = 1e18;

    /// @notice May fund rewards and hand this role on.
    address public admin;

    /// @notice Base units of `token` staked by everyone.
    mapping(address token => uint256) public totalStaked;
    /// @notice Base units of `token` staked by `user`.
    mapping(address token => mapping(address user => uint256)) public stakedOf;
    /// @notice Wei of reward per staked base unit of `token` since deployment, times PRECISION.
    mapping(address token => uint256) public rewardPerToken;

    mapping(address token => mapping(address user => uint256)) private _settledAt;
    mapping(address token => mapping(address user => uint256)) private _owed;

    event Staked(address indexed user, address indexed token, uint256 amount);
    event Unstaked(address indexed user, address indexed token, uint256 amount);
    event RewardsFunded(address indexed token, uint256 amount);
    event Claimed(address indexed user, uint256 amount);
    event AdminChanged(address indexed previousAdmin, address indexed newAdmin);

    error NotAdmin();
    error ZeroAmount();
    error ZeroAddress();
    /// @notice `user` tried to unstake more than it has staked.
    error InsufficientStake(uint256 staked, uint256 wanted);
    /// @notice Rewards for a token nobody stakes would belong to nobody.
    error NoStakers(address token);
    error NothingToClaim();
    error TransferFailed(address token, address to, uint256 amount);

    modifier onlyAdmin() {
        if (msg.sender != admin) revert NotAdmin();
        _;
    }

    constructor() {
        admin = msg.sender;
        emit AdminChanged(address(0), msg.sender);
    }

    // ---------------------------------------------------------------- staking

    /// @notice Moves `amount` of `token` from the caller into the program (approve it first).
    /// @dev Credits what actually arrived, so a token that charges a fee on transfer cannot
    ///      credit more than the contract holds.
    function stake(address token, uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        _settle(token, msg.sender);
        uint256 before = IERC20Staked(token).balanceOf(address(this));
        _call(token, abi.encodeCall(IERC20Staked.transferFrom, (msg.sender, address(this), amount)));
        uint256 received = IERC20Staked(token).balanceOf(address(this)) - before;
        stakedOf[token][msg.sender] += received;
        totalStaked[token] += received;
        emit Staked(msg.sender, token, received);
    }

    /// @notice Returns `amount` of the caller's staked `token`; rewards earned so far stay owed.
    function unstake(address token, uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        uint256 staked = stakedOf[token][msg.sender];
        if (amount > staked) revert InsufficientStake(staked, amount);
        _settle(token, msg.sender);
        stakedOf[token][msg.sender] = staked - amount;
        totalStaked[token] -= amount;
        _call(token, abi.encodeCall(IERC20Staked.transfer, (msg.sender, amount)));
        emit Unstaked(msg.sender, token, amount);
    }

    // ---------------------------------------------------------------- rewards

    /// @notice Shares msg.value among the current stakers of `token`, pro rata.
    function fundRewards(address token) external payable onlyAdmin {
        if (msg.value == 0) revert ZeroAmount();
        uint256 total = totalStaked[token];
        if (total == 0) revert NoStakers(token);
        rewardPerToken[token] += (msg.value * PRECISION) / total;
        emit RewardsFunded(token, msg.value);
    }

    /// @notice Wei `user` can claim for staking `token`.
    function earned(address token, address user) public view returns (uint256) {
        uint256 pending = (stakedOf[token][user] * (rewardPerToken[token] - _settledAt[token][user]))
            / PRECISION;
        return _owed[token][user] + pending;
    }

    /// @notice Wei `user` can claim for all of `tokens` together (what `claim(tokens)` pays).
    function earnedAll(address user, address[] calldata tokens) external view returns (uint256 sum) {
        for (uint256 i = 0; i < tokens.length; ++i) {
            if (!_seenBefore(tokens, i)) sum += earned(tokens[i], user);
        }
    }

    /// @notice Pays the caller every reward it earned by staking any of `tokens`, in ETH.
    function claim(address[] calldata tokens) external returns (uint256 amount) {
        for (uint256 i = 0; i < tokens.length; ++i) {
            _settle(tokens[i], msg.sender);
            amount += _owed[tokens[i]][msg.sender];
            _owed[tokens[i]][msg.sender] = 0;
        }
        if (amount == 0) revert NothingToClaim();
        (bool sent, ) = payable(msg.sender).call{value: amount}("");
        if (!sent) revert TransferFailed(address(0), msg.sender, amount);
        emit Claimed(msg.sender, amount);
    }

    // ---------------------------------------------------------------- admin

    /// @notice Hands the admin role to `newAdmin`.
    function changeAdmin(address newAdmin) external onlyAdmin {
        if (newAdmin == address(0)) revert ZeroAddress();
        emit AdminChanged(admin, newAdmin);
        admin = newAdmin;
    }

    // ---------------------------------------------------------------- internals

    /// @dev Books what `user` earned on `token` up to now, before its stake changes.
    function _settle(address token, address user) private {
        _owed[token][user] = earned(token, user);
        _settledAt[token][user] = rewardPerToken[token];
    }

    /// @dev Whether `tokens[i]` already appeared earlier in the list (counted once).
    function _seenBefore(address[] calldata tokens, uint256 i) private pure returns (bool) {
        for (uint256 j = 0; j < i; ++j) {
            if (tokens[j] == tokens[i]) return true;
        }
        return false;
    }

    /// @dev An ERC20 call that accepts tokens returning nothing (USDT) as well as `true`.
    function _call(address token, bytes memory data) private {
        if (token.code.length == 0) revert TransferFailed(token, msg.sender, 0);
        (bool ok, bytes memory result) = token.call(data);
        if (!ok || (result.length != 0 && !abi.decode(result, (bool)))) {
            revert TransferFailed(token, msg.sender, 0);
        }
    }
}
